//! Measuring every pair of CPUs through [`Engine::ping_pong`].

use super::model::C2c;
use crate::cpuset::CpuSet;
use crate::engine::{Engine, PingPongSpec};
use crate::topology::Topology;
use anyhow::Result;

/// The pairs to measure: every a < b in `cpus`.
pub fn pairs(cpus: &CpuSet) -> Vec<(u32, u32)> {
    let v = cpus.to_vec();
    let mut out = Vec::new();
    for (i, &a) in v.iter().enumerate() {
        for &b in &v[i + 1..] {
            out.push((a, b));
        }
    }
    out
}

/// Measures every pair of `cpus` on `engine` (stops early on Ctrl-C, marking the
/// result `interrupted`). A pair that reached its time limit
/// ([`crate::engine::pair_time_limit`]) is kept with the samples it has. `on_pair`
/// is called after each pair, e.g. for progress.
pub fn measure(
    engine: &dyn Engine,
    topo: &Topology,
    cpus: &CpuSet,
    spec: &PingPongSpec,
    on_pair: &mut dyn FnMut(usize, usize),
) -> Result<C2c> {
    let todo = pairs(cpus);
    let mut samples = Vec::with_capacity(todo.len());
    let mut interrupted = false;
    for (k, &(a, b)) in todo.iter().enumerate() {
        if crate::interrupt::requested() {
            interrupted = true;
            break;
        }
        let s = engine.ping_pong(a, b, spec)?;
        if s.len() < spec.samples && crate::interrupt::requested() {
            interrupted = true;
            break;
        }
        samples.push(((a, b), s));
        on_pair(k + 1, todo.len());
    }
    Ok(C2c::from_samples(topo, cpus, spec, &samples, interrupted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_unordered_and_complete() {
        let p = pairs(&CpuSet::from_cpus([0, 2, 5]));
        assert_eq!(p, [(0, 2), (0, 5), (2, 5)]);
        assert!(pairs(&CpuSet::from_cpus([3])).is_empty());
    }
}
