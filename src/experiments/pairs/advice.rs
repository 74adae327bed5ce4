//! Placement advice, pure: given each workload's thread count and floor and the predicted
//! speed of every pair, which threads share a core (or, without SMT, a cache pair) so that
//! the total speed is highest while every thread keeps its floor — and what that means for
//! HT.
//!
//! - Exact up to [`EXACT_MAX_THREADS`] threads: every way of forming the pairs the cores
//!   force is tried (a maximum-weight matching by brute force; 140,152 partial matchings
//!   for 12 threads, the telephone number T(12)).
//! - Beyond, a heuristic: pairs taken greedily, the best-scoring feasible pair of the
//!   threads left first, then pair swaps (a b | c d → a c | b d, a d | b c) while the
//!   total improves, as SMTcheck pairs (greedy by a symbiosis score, then swaps). Not
//!   guaranteed optimal; the result says which method ran.
//!
//! A thread alone on its core runs at 1.0 (its solo speed); with more threads than cores
//! and HT off, the cores are time-shared: each thread gets cores ÷ threads. Each thread is
//! modelled by its workload's single-thread profile.

use super::model::{Advice, AdvisedWorkload, Interval, PartnerKind};
use crate::cpuset::CpuSet;
use crate::error::NotPossible;

/// Largest thread count searched exhaustively.
pub const EXACT_MAX_THREADS: usize = 12;
/// HT is worth keeping when pairing beats one thread per core by more than this share.
pub const WORTH: f64 = 0.01;

/// What the search needs: per workload its threads and floor, and the predicted speed of
/// workload i beside workload j.
#[derive(Debug, Clone)]
pub struct Input {
    pub names: Vec<String>,
    pub threads: Vec<usize>,
    pub floors: Vec<f64>,
    /// `speed[i][j]`: i's speed beside j.
    pub speed: Vec<Vec<Interval>>,
    /// The machine's sharing units: the two SMT siblings of a core (or two cores sharing a
    /// cache), a unit of one CPU where there is no partner.
    pub units: Vec<Vec<u32>>,
    pub kind: PartnerKind,
}

/// A pairing: pairs of thread indices, and the threads alone.
#[derive(Debug, Clone, PartialEq)]
struct Pairing {
    pairs: Vec<(usize, usize)>,
    singles: Vec<usize>,
}

impl Input {
    fn owner(&self) -> Vec<usize> {
        self.threads
            .iter()
            .enumerate()
            .flat_map(|(w, &n)| std::iter::repeat_n(w, n))
            .collect()
    }

    fn s(&self, a: usize, b: usize) -> f64 {
        self.speed[a][b].estimate
    }

    /// Total speed of a pairing, or None when a thread falls below its floor.
    fn score(&self, owner: &[usize], p: &Pairing) -> Option<f64> {
        let mut total = p.singles.len() as f64;
        for &(x, y) in &p.pairs {
            let (a, b) = (owner[x], owner[y]);
            let (sa, sb) = (self.s(a, b), self.s(b, a));
            if sa < self.floors[a] || sb < self.floors[b] {
                return None;
            }
            total += sa + sb;
        }
        Some(total)
    }
}

/// Every pairing with at least `min_pairs` pairs, at most `max_pairs` and at most `units`
/// units used, best first kept.
fn exact(
    input: &Input,
    owner: &[usize],
    min_pairs: usize,
    max_pairs: usize,
    units: usize,
) -> (Option<(f64, Pairing)>, u64) {
    fn go(
        input: &Input,
        owner: &[usize],
        left: &mut Vec<usize>,
        cur: &mut Pairing,
        lim: (usize, usize, usize),
        best: &mut Option<(f64, Pairing)>,
        tried: &mut u64,
    ) {
        let Some(&first) = left.first() else {
            let p = cur.pairs.len();
            if p >= lim.0 && p <= lim.1 && p + cur.singles.len() <= lim.2 {
                *tried += 1;
                if let Some(s) = input.score(owner, cur) {
                    // Ties go to fewer pairs: sharing that gains nothing is not advised.
                    let better = match best {
                        None => true,
                        Some((b, bp)) => {
                            s > *b + 1e-9 || ((s - *b).abs() <= 1e-9 && p < bp.pairs.len())
                        }
                    };
                    if better {
                        *best = Some((s, cur.clone()));
                    }
                }
            }
            return;
        };
        left.remove(0);
        // Alone.
        cur.singles.push(first);
        go(input, owner, left, cur, lim, best, tried);
        cur.singles.pop();
        // With each later thread, once per workload (threads of one workload are alike).
        if cur.pairs.len() < lim.1 {
            let mut seen = Vec::new();
            for k in 0..left.len() {
                let other = left[k];
                if seen.contains(&owner[other]) {
                    continue;
                }
                seen.push(owner[other]);
                left.remove(k);
                cur.pairs.push((first, other));
                go(input, owner, left, cur, lim, best, tried);
                cur.pairs.pop();
                left.insert(k, other);
            }
        }
        left.insert(0, first);
    }
    let mut left: Vec<usize> = (0..owner.len()).collect();
    let mut cur = Pairing {
        pairs: Vec::new(),
        singles: Vec::new(),
    };
    let mut best = None;
    let mut tried = 0;
    go(
        input,
        owner,
        &mut left,
        &mut cur,
        (min_pairs, max_pairs, units),
        &mut best,
        &mut tried,
    );
    (best, tried)
}

/// The pairings one swap away from `p` that change pair `i`: it exchanges partners with
/// each later pair (both ways: (a, c)(b, d) and (a, d)(b, c)), or either of its threads
/// trades places with each single, in that order.
fn swap_moves(p: &Pairing, i: usize) -> Vec<Pairing> {
    let mut out = Vec::new();
    let (a, b) = p.pairs[i];
    for j in i + 1..p.pairs.len() {
        let (c, d) = p.pairs[j];
        for (x, y) in [((a, c), (b, d)), ((a, d), (b, c))] {
            let mut q = p.clone();
            q.pairs[i] = x;
            q.pairs[j] = y;
            out.push(q);
        }
    }
    for k in 0..p.singles.len() {
        for side in 0..2 {
            let mut q = p.clone();
            let single = q.singles[k];
            let pair = &mut q.pairs[i];
            q.singles[k] = if side == 0 {
                std::mem::replace(&mut pair.0, single)
            } else {
                std::mem::replace(&mut pair.1, single)
            };
            out.push(q);
        }
    }
    out
}

/// Greedy pairs then swaps (see the module docs).
fn heuristic(input: &Input, owner: &[usize], pairs_needed: usize) -> (Option<(f64, Pairing)>, u64) {
    let mut left: Vec<usize> = (0..owner.len()).collect();
    let mut p = Pairing {
        pairs: Vec::new(),
        singles: Vec::new(),
    };
    let mut tried = 0u64;
    for _ in 0..pairs_needed {
        let mut best: Option<(f64, usize, usize)> = None;
        for (i, &x) in left.iter().enumerate() {
            for &y in &left[i + 1..] {
                tried += 1;
                let (a, b) = (owner[x], owner[y]);
                let (sa, sb) = (input.s(a, b), input.s(b, a));
                if sa < input.floors[a] || sb < input.floors[b] {
                    continue;
                }
                if best.is_none_or(|(s, _, _)| sa + sb > s) {
                    best = Some((sa + sb, x, y));
                }
            }
        }
        let (_, x, y) = match best {
            Some(b) => b,
            None => return (None, tried),
        };
        left.retain(|&t| t != x && t != y);
        p.pairs.push((x, y));
    }
    p.singles = left;
    let mut score = match input.score(owner, &p) {
        Some(s) => s,
        None => return (None, tried),
    };
    // First improvement: take the first move that raises the score, then start again.
    let mut improved = true;
    let mut rounds = 0;
    while improved && rounds < 100 {
        improved = false;
        rounds += 1;
        'outer: for i in 0..p.pairs.len() {
            for q in swap_moves(&p, i) {
                tried += 1;
                if let Some(s) = input.score(owner, &q)
                    && s > score + 1e-9
                {
                    p = q;
                    score = s;
                    improved = true;
                    break 'outer;
                }
            }
        }
    }
    (Some((score, p)), tried)
}

/// The best placement, or why none exists: more threads than CPUs, or floors no
/// placement meets (both "not possible", exit 3).
pub fn advise(input: &Input) -> Result<Advice, NotPossible> {
    let owner = input.owner();
    let n = owner.len();
    let cpus: usize = input.units.iter().map(Vec::len).sum();
    let units = input.units.len();
    let doubles = input.units.iter().filter(|u| u.len() >= 2).count();
    if n > cpus {
        return Err(NotPossible(format!(
            "--advise asks for {n} threads and this machine has {cpus} usable CPUs; give \
             fewer threads (a placement puts at most one thread on each CPU)"
        )));
    }
    let min_pairs = n.saturating_sub(units);
    let max_pairs = doubles.min(n / 2);
    // Unshared: one thread per unit, time-shared beyond the units (HT off).
    let unshared_speed = if n <= units {
        1.0
    } else {
        units as f64 / n as f64
    };
    let unshared_ok = input
        .threads
        .iter()
        .zip(&input.floors)
        .all(|(&k, &f)| k == 0 || unshared_speed >= f);
    let throughput_unshared = unshared_speed * n as f64;
    let (best, tried, method) = if n <= EXACT_MAX_THREADS {
        let (b, t) = exact(input, &owner, min_pairs, max_pairs.max(min_pairs), units);
        (b, t, "exact (every pairing tried)")
    } else {
        let (b, t) = heuristic(input, &owner, min_pairs);
        (b, t, "greedy pairs, then swaps (not guaranteed optimal)")
    };
    let Some((throughput, pairing)) = best.filter(|_| min_pairs <= max_pairs) else {
        if unshared_ok && input.kind == PartnerKind::SmtSiblings {
            return Ok(unshared_advice(
                input,
                &owner,
                throughput_unshared,
                unshared_speed,
                tried,
                method,
            ));
        }
        return Err(NotPossible(floor_message(input, &owner, min_pairs)));
    };
    let mut advice = layout(
        input,
        &owner,
        &pairing,
        throughput,
        (input.kind == PartnerKind::SmtSiblings).then_some(throughput_unshared),
        tried,
        method,
    );
    let worth = throughput > throughput_unshared * (1.0 + WORTH);
    advice.verdict = verdict(input, &advice, worth, unshared_ok);
    Ok(advice)
}

/// Why no placement meets the floors: each floored workload's best partner.
fn floor_message(input: &Input, owner: &[usize], pairs: usize) -> String {
    let mut parts = Vec::new();
    for (w, name) in input.names.iter().enumerate() {
        if input.floors[w] <= 0.0 || input.threads[w] == 0 {
            continue;
        }
        let best = owner.iter().map(|&o| input.s(w, o)).fold(0.0, f64::max);
        parts.push(format!(
            "{name} keeps at best {} beside another of these workloads (floor {})",
            crate::render::fixed2(best),
            crate::render::fixed2(input.floors[w])
        ));
    }
    format!(
        "no placement meets the floors: {} threads on {} units force {pairs} pairs, and {}; \
         lower a --floor, give fewer threads, or use a machine with more cores",
        owner.len(),
        input.units.len(),
        parts.join("; ")
    )
}

/// Where each thread runs: pairs on the first units, then the threads alone.
fn layout(
    input: &Input,
    owner: &[usize],
    p: &Pairing,
    throughput: f64,
    throughput_unshared: Option<f64>,
    tried: u64,
    method: &str,
) -> Advice {
    let mut doubles = input.units.iter().filter(|u| u.len() >= 2);
    let mut rest: Vec<&Vec<u32>> = Vec::new();
    let mut cpus: Vec<CpuSet> = vec![CpuSet::new(); input.names.len()];
    let mut speeds: Vec<Vec<(f64, f64)>> = vec![Vec::new(); input.names.len()];
    let mut shared = vec![0usize; input.names.len()];
    let mut used = CpuSet::new();
    let mut pairs = Vec::new();
    let mut sorted = p.pairs.clone();
    sorted.sort_by_key(|&(x, y)| (owner[x].min(owner[y]), owner[x].max(owner[y])));
    for (x, y) in sorted {
        let u = doubles.next().expect("pairs ≤ two-CPU units");
        let (a, b) = (owner[x], owner[y]);
        cpus[a].insert(u[0]);
        cpus[b].insert(u[1]);
        used.insert(u[0]);
        used.insert(u[1]);
        speeds[a].push((input.speed[a][b].estimate, input.speed[a][b].low));
        speeds[b].push((input.speed[b][a].estimate, input.speed[b][a].low));
        shared[a] += 1;
        shared[b] += 1;
        let (n1, n2) = (&input.names[a], &input.names[b]);
        pairs.push(if n1 <= n2 {
            (n1.clone(), n2.clone())
        } else {
            (n2.clone(), n1.clone())
        });
    }
    rest.extend(doubles);
    rest.extend(input.units.iter().filter(|u| u.len() < 2));
    let mut singles = p.singles.clone();
    singles.sort_by_key(|&t| owner[t]);
    for (t, u) in singles.iter().zip(rest) {
        let a = owner[*t];
        cpus[a].insert(u[0]);
        used.insert(u[0]);
        speeds[a].push((1.0, 1.0));
    }
    let all: CpuSet = input.units.iter().flatten().copied().collect();
    let workloads = input
        .names
        .iter()
        .enumerate()
        .filter(|(w, _)| input.threads[*w] > 0)
        .map(|(w, name)| {
            let mut s = speeds[w].clone();
            s.sort_by(|p, q| p.0.total_cmp(&q.0));
            AdvisedWorkload {
                workload: name.clone(),
                threads: input.threads[w],
                cpus: cpus[w].to_list(),
                speeds: s.iter().map(|x| x.0).collect(),
                lowest_low: s.iter().map(|x| x.1).fold(f64::INFINITY, f64::min),
                floor: input.floors[w],
                shared_threads: shared[w],
            }
        })
        .collect();
    Advice {
        method: method.into(),
        tried,
        pairs,
        workloads,
        throughput,
        throughput_unshared,
        idle_cpus: all.difference(&used).to_list(),
        verdict: String::new(),
    }
}

/// HT off: one thread per core, the cores time-shared when there are more threads.
fn unshared_advice(
    input: &Input,
    owner: &[usize],
    throughput: f64,
    speed: f64,
    tried: u64,
    method: &str,
) -> Advice {
    let units = input.units.len();
    let n = owner.len();
    let singles: Vec<usize> = (0..n.min(units)).collect();
    let mut a = layout(
        input,
        owner,
        &Pairing {
            pairs: Vec::new(),
            singles,
        },
        throughput,
        Some(throughput),
        tried,
        method,
    );
    for w in &mut a.workloads {
        w.speeds = vec![speed; w.threads];
        w.lowest_low = speed;
    }
    a.verdict = format!(
        "turn HT off: every pairing of these workloads breaks a floor, and one thread per \
         core (time-shared, {} of a core each) keeps them all",
        crate::render::fixed2(speed)
    );
    a
}

fn verdict(input: &Input, a: &Advice, worth: bool, unshared_ok: bool) -> String {
    let pairs: Vec<String> = {
        let mut v: Vec<String> = a
            .pairs
            .iter()
            .map(|(x, y)| format!("{x} with {y}"))
            .collect();
        v.dedup();
        v
    };
    let whole: Vec<&str> = a
        .workloads
        .iter()
        .filter(|w| w.shared_threads == 0)
        .map(|w| w.workload.as_str())
        .collect();
    let total = crate::render::fixed2(a.throughput);
    let unshared = a
        .throughput_unshared
        .map_or_else(|| crate::render::NONE.to_string(), crate::render::fixed2);
    match input.kind {
        PartnerKind::SmtSiblings if a.pairs.is_empty() => {
            "every thread gets a core of its own: nothing needs to share, so HT neither helps \
             nor hurts these workloads (their idle siblings are free for other work)"
                .to_string()
        }
        PartnerKind::SmtSiblings if worth => format!(
            "keep HT on and pair {}{}: predicted total {total} solo speeds, against {unshared} \
             with one thread per core (HT off)",
            pairs.join(", "),
            if whole.is_empty() {
                String::new()
            } else {
                format!("; give {} whole cores", whole.join(", "))
            }
        ),
        PartnerKind::SmtSiblings => format!(
            "turn HT off{}: no pairing of these workloads beats one thread per core (predicted \
             {total} against {unshared} solo speeds)",
            if unshared_ok {
                ""
            } else {
                " only if the floors allow it"
            }
        ),
        PartnerKind::SharedCache if a.pairs.is_empty() => {
            "this machine has no SMT: each thread gets a CPU whose cache partner is idle"
                .to_string()
        }
        PartnerKind::SharedCache => format!(
            "this machine has no SMT, so HT is not a choice here: the pairs share a cache, \
             not a core; run {} side by side{} (predicted total {total} solo speeds)",
            pairs.join(", "),
            if whole.is_empty() {
                String::new()
            } else {
                format!(
                    ", and give {} CPUs whose cache partner is idle",
                    whole.join(", ")
                )
            }
        ),
    }
}

/// The sharing units of `topo` this process may use: each core's two SMT siblings, or
/// (without SMT) the cores of each last-level cache two by two.
pub fn units(topo: &crate::topology::Topology, kind: PartnerKind) -> Vec<Vec<u32>> {
    let allowed = topo.allowed();
    match kind {
        PartnerKind::SmtSiblings => topo
            .cores()
            .iter()
            .map(|c| {
                c.intersection(&allowed)
                    .iter()
                    .take(2)
                    .collect::<Vec<u32>>()
            })
            .filter(|u| !u.is_empty())
            .collect(),
        PartnerKind::SharedCache => {
            let mut out = Vec::new();
            for g in topo.llc_groups() {
                let firsts: Vec<u32> = topo
                    .cores()
                    .iter()
                    .filter(|c| c.is_subset(&g))
                    .filter_map(|c| c.intersection(&allowed).first())
                    .collect();
                out.extend(firsts.chunks(2).map(<[u32]>::to_vec));
            }
            out
        }
    }
}

/// The search's input from a request and the predicted pairs (A's speed beside B); a
/// workload without a prediction is refused.
pub fn input_from(
    req: &super::config::AdviceRequest,
    pairs: &[super::model::PairEntry],
    units: Vec<Vec<u32>>,
    kind: PartnerKind,
) -> Result<Input, NotPossible> {
    let names: Vec<String> = req.threads.iter().map(|t| t.0.clone()).collect();
    let mut speed = Vec::new();
    for a in &names {
        let mut row = Vec::new();
        for b in &names {
            let p = pairs
                .iter()
                .find(|p| p.a == *a && p.b == *b)
                .and_then(|p| p.predicted)
                .ok_or_else(|| {
                    NotPossible(format!("--advise: no prediction for {a} beside {b}"))
                })?;
            row.push(p);
        }
        speed.push(row);
    }
    Ok(Input {
        threads: req.threads.iter().map(|t| t.1).collect(),
        floors: names.iter().map(|n| req.floor_of(n)).collect(),
        names,
        speed,
        units,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(x: f64) -> Interval {
        Interval {
            estimate: x,
            low: x - 0.05,
            high: x + 0.05,
            confidence: 0.9,
            n: 0,
        }
    }

    fn input(
        names: &[&str],
        threads: &[usize],
        floors: &[f64],
        speed: &[&[f64]],
        cores: u32,
    ) -> Input {
        Input {
            names: names.iter().map(|s| s.to_string()).collect(),
            threads: threads.to_vec(),
            floors: floors.to_vec(),
            speed: speed
                .iter()
                .map(|r| r.iter().map(|&x| iv(x)).collect())
                .collect(),
            // x86 numbering: CPU i and i + cores are siblings.
            units: (0..cores).map(|c| vec![c, c + cores]).collect(),
            kind: PartnerKind::SmtSiblings,
        }
    }

    #[test]
    fn lock_workers_and_a_memory_scanner_keep_the_scanner_off_the_workers_cores() {
        // The classic case: a lock worker beside the scanner on its sibling acquires about
        // 10x less (0.1); two workers share a core at 0.6 each; the scanner beside a batch
        // job barely notices, and the batch job keeps 0.85. 4 workers + 1 scan + 1 batch on
        // 3 cores.
        let i = input(
            &["lock", "scan", "batch"],
            &[4, 1, 1],
            &[0.0, 0.0, 0.0],
            &[&[0.6, 0.1, 0.7], &[0.95, 0.6, 0.9], &[0.7, 0.85, 0.6]],
            3,
        );
        let a = advise(&i).unwrap();
        assert!(a.method.starts_with("exact"));
        assert!(
            !a.pairs
                .iter()
                .any(|(x, y)| (x == "lock" && y == "scan") || (x == "scan" && y == "lock")),
            "{a:?}"
        );
        assert!(a.pairs.contains(&("batch".into(), "scan".into())), "{a:?}");
        // 2 lock pairs (0.6 + 0.6) + batch/scan (0.85 + 0.9) = 4.15 against 3 cores time-shared.
        assert!((a.throughput - 4.15).abs() < 1e-9, "{}", a.throughput);
        assert!(
            a.verdict.contains("keep HT on") && a.verdict.contains("batch with scan"),
            "{}",
            a.verdict
        );
        let lock = a.workloads.iter().find(|w| w.workload == "lock").unwrap();
        let scan = a.workloads.iter().find(|w| w.workload == "scan").unwrap();
        // No CPU of the scanner is a sibling of a lock worker's CPU.
        let lock_cpus = CpuSet::parse_list(&lock.cpus).unwrap();
        for c in CpuSet::parse_list(&scan.cpus).unwrap().iter() {
            let sib = if c < 3 { c + 3 } else { c - 3 };
            assert!(!lock_cpus.contains(sib), "{a:?}");
        }
    }

    #[test]
    fn no_pairing_beats_ht_off_and_a_floor_no_placement_meets() {
        // Time-shared siblings: every pair 0.5 + 0.5 = one core's worth.
        let half: &[&[f64]] = &[&[0.5, 0.5], &[0.5, 0.5]];
        let i = input(&["a", "b"], &[2, 2], &[0.0, 0.0], half, 2);
        let a = advise(&i).unwrap();
        assert!(a.verdict.starts_with("turn HT off"), "{}", a.verdict);
        // Fewer threads than cores: nothing shares.
        let i = input(&["a", "b"], &[1, 1], &[0.0, 0.0], half, 2);
        let a = advise(&i).unwrap();
        assert!(
            a.pairs.is_empty() && a.verdict.contains("neither helps nor hurts"),
            "{}",
            a.verdict
        );
        // db needs 0.9, every partner leaves it 0.7, and 3 threads on 2 cores must pair.
        let i = input(
            &["db", "x"],
            &[2, 1],
            &[0.9, 0.0],
            &[&[0.7, 0.7], &[0.9, 0.9]],
            2,
        );
        let e = advise(&i).unwrap_err().0;
        assert!(
            e.contains("no placement meets the floors") && e.contains("db keeps at best 0.70"),
            "{e}"
        );
        // More threads than CPUs.
        let i = input(&["a"], &[5], &[0.0], &[&[0.9]], 2);
        let e = advise(&i).unwrap_err().0;
        assert!(
            e.contains("5 threads") && e.contains("4 usable CPUs"),
            "{e}"
        );
    }

    #[test]
    fn the_heuristic_finds_the_obvious_pairing_beyond_the_exact_limit() {
        // 16 threads on 8 cores: a+b pairs are good (0.9 each), a+a and b+b poor.
        let i = input(
            &["a", "b"],
            &[8, 8],
            &[0.0, 0.0],
            &[&[0.5, 0.9], &[0.9, 0.5]],
            8,
        );
        let a = advise(&i).unwrap();
        assert!(a.method.starts_with("greedy"));
        assert!((a.throughput - 14.4).abs() < 1e-9, "{}", a.throughput);
        // Exact on a smaller copy agrees.
        let i = input(
            &["a", "b"],
            &[4, 4],
            &[0.0, 0.0],
            &[&[0.5, 0.9], &[0.9, 0.5]],
            4,
        );
        assert!((advise(&i).unwrap().throughput - 7.2).abs() < 1e-9);
    }

    #[test]
    fn the_swaps_repair_a_greedy_first_pair_that_strands_the_rest() {
        // a+b is the best single pair (0.95 each), and taking it leaves c+d at 0.3 each:
        // 2.5 in all. Swapping partners gives a+c and b+d at 0.75 each: 3.0, the optimum.
        let i = input(
            &["a", "b", "c", "d"],
            &[1, 1, 1, 1],
            &[0.0; 4],
            &[
                &[0.5, 0.95, 0.75, 0.5],
                &[0.95, 0.5, 0.5, 0.75],
                &[0.75, 0.5, 0.5, 0.3],
                &[0.5, 0.75, 0.3, 0.5],
            ],
            2,
        );
        let owner = i.owner();
        let (best, _) = heuristic(&i, &owner, 2);
        let (score, p) = best.unwrap();
        assert!((score - 3.0).abs() < 1e-9, "{score} {:?}", p.pairs);
        let (exact_best, _) = exact(&i, &owner, 2, 2, 2);
        assert!((exact_best.unwrap().0 - score).abs() < 1e-9);
        // The moves of pair 0 among 2 pairs and 1 single: both partner exchanges with
        // pair 1, then either thread with the single.
        let p = Pairing {
            pairs: vec![(0, 1), (2, 3)],
            singles: vec![4],
        };
        let m = swap_moves(&p, 0);
        assert_eq!(m.len(), 4);
        assert_eq!(m[0].pairs, [(0, 2), (1, 3)]);
        assert_eq!(m[1].pairs, [(0, 3), (1, 2)]);
        assert_eq!((m[2].pairs[0], m[2].singles[0]), ((4, 1), 0));
        assert_eq!((m[3].pairs[0], m[3].singles[0]), ((0, 4), 1));
        assert!(
            swap_moves(&p, 1).len() == 2,
            "the last pair only trades with the single"
        );
    }
}
