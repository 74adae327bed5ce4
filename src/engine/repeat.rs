//! Repetitions, and compared configurations interleaved A B A B … rather than all of A
//! then all of B: frequency, thermal and neighbour drift is what this tool studies, so it
//! must hit every configuration alike (hyperfine issue #21 asks for the same).

use super::{Engine, RunResult, RunSpec, Workload};
use crate::placement::Plan;
use crate::stats::SplitMix64;
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// The order configurations run in, within each round of one run per configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "seed")]
pub enum Order {
    /// A B C, A B C, …
    RoundRobin,
    /// Each round a fresh permutation from this seed (print it with the results).
    Shuffled(u64),
    /// [`counterbalanced`]: A B C, C B A, B C A, A C B, …
    Counterbalanced,
}

/// The order of `configs` configurations in round `round` (from 0), counterbalanced: the
/// rounds go in mirrored pairs (A B C then C B A), the first of each pair rotated one step
/// further than the last (B C A, A C B, then C A B, B A C). Within each such pair of rounds
/// every two configurations run once in each order and every configuration's positions
/// add up to the same, so a drift that grows steadily through the rounds (warming up,
/// throttling, a cache filling) weighs on each alike — the ABBA design of crossover
/// trials; over 2 × `configs` rounds each configuration also runs first equally often.
/// Always running A before B instead hands A the cooler start of every round.
pub fn counterbalanced(configs: usize, round: usize) -> Vec<usize> {
    let shift = (round / 2) % configs.max(1);
    let mut order: Vec<usize> = (0..configs).map(|i| (i + shift) % configs).collect();
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

/// One configuration to compare: a label, a plan and a workload.
#[derive(Clone, Copy)]
pub struct Trial<'a> {
    pub label: &'a str,
    pub plan: &'a Plan,
    pub workload: &'a dyn Workload,
}

/// The sequence of configuration indices to run: `repeat` rounds, each holding every
/// configuration once.
pub fn schedule(configs: usize, repeat: usize, order: Order) -> Vec<usize> {
    let mut out = Vec::with_capacity(configs * repeat);
    let mut rng = match order {
        Order::Shuffled(seed) => Some(SplitMix64::new(seed)),
        Order::RoundRobin | Order::Counterbalanced => None,
    };
    for k in 0..repeat {
        let mut round: Vec<usize> = match order {
            Order::Counterbalanced => counterbalanced(configs, k),
            _ => (0..configs).collect(),
        };
        if let Some(rng) = rng.as_mut() {
            rng.shuffle(&mut round);
        }
        out.extend(round);
    }
    out
}

/// Runs every trial `repeat` times in interleaved order and returns the results grouped
/// per trial (`results[trial][repetition]`). Stops early, returning what finished, after a
/// run that was interrupted or when Ctrl-C arrived between runs; check
/// [`RunResult::interrupted`] on the last result or [`crate::interrupt::requested`].
pub fn interleave(
    engine: &dyn Engine,
    trials: &[Trial<'_>],
    spec: &RunSpec,
    repeat: usize,
    order: Order,
    on_run: &mut dyn FnMut(usize, usize, &RunResult),
) -> Result<Vec<Vec<RunResult>>> {
    let mut results: Vec<Vec<RunResult>> = trials.iter().map(|_| Vec::new()).collect();
    for idx in schedule(trials.len(), repeat, order) {
        if crate::interrupt::requested() {
            break;
        }
        let t = &trials[idx];
        let r = engine.run(t.plan, spec, t.workload)?;
        let stop = r.interrupted;
        on_run(idx, results[idx].len(), &r);
        results[idx].push(r);
        if stop {
            break;
        }
    }
    Ok(results)
}

/// Runs one configuration `n` times (stops early on Ctrl-C, as [`interleave`]).
pub fn repeat(
    engine: &dyn Engine,
    plan: &Plan,
    spec: &RunSpec,
    workload: &dyn Workload,
    n: usize,
) -> Result<Vec<RunResult>> {
    let trial = Trial {
        label: "",
        plan,
        workload,
    };
    Ok(interleave(
        engine,
        &[trial],
        spec,
        n,
        Order::RoundRobin,
        &mut |_, _, _| {},
    )?
    .pop()
    .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_alternates() {
        assert_eq!(schedule(2, 3, Order::RoundRobin), [0, 1, 0, 1, 0, 1]);
        assert!(schedule(3, 0, Order::RoundRobin).is_empty());
    }

    #[test]
    fn counterbalanced_rounds_mirror_in_pairs_and_rotate() {
        // Two configurations: A B, B A, B A, A B — ABBA.
        assert_eq!(
            schedule(2, 4, Order::Counterbalanced),
            [0, 1, 1, 0, 1, 0, 0, 1]
        );
        let rounds: Vec<Vec<usize>> = (0..6).map(|k| counterbalanced(3, k)).collect();
        assert_eq!(
            rounds,
            [
                [0, 1, 2],
                [2, 1, 0],
                [1, 2, 0],
                [0, 2, 1],
                [2, 0, 1],
                [1, 0, 2]
            ]
        );
        for k in [3, 4, 5] {
            let pos = |round: &[usize], c: usize| round.iter().position(|&x| x == c).unwrap();
            for pair in (0..2 * k).collect::<Vec<_>>().chunks(2) {
                let (a, b) = (counterbalanced(k, pair[0]), counterbalanced(k, pair[1]));
                // Each round a permutation; in each mirrored pair every configuration's
                // positions add up to k − 1 and every two run in both orders.
                let mut s = a.clone();
                s.sort();
                assert_eq!(s, (0..k).collect::<Vec<_>>());
                for c in 0..k {
                    assert_eq!(pos(&a, c) + pos(&b, c), k - 1);
                }
            }
            // Over 2k rounds each runs first twice.
            let firsts: Vec<usize> = (0..2 * k).map(|r| counterbalanced(k, r)[0]).collect();
            for c in 0..k {
                assert_eq!(firsts.iter().filter(|&&f| f == c).count(), 2, "{firsts:?}");
            }
        }
        assert_eq!(counterbalanced(1, 3), [0]);
        assert!(counterbalanced(0, 1).is_empty());
    }

    #[test]
    fn shuffled_rounds_are_permutations_and_reproducible() {
        let a = schedule(4, 5, Order::Shuffled(7));
        assert_eq!(a, schedule(4, 5, Order::Shuffled(7)));
        for round in a.chunks(4) {
            let mut r = round.to_vec();
            r.sort();
            assert_eq!(r, [0, 1, 2, 3]);
        }
        assert_ne!(a, schedule(4, 5, Order::RoundRobin));
    }
}
