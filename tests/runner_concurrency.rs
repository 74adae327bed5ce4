//! Two commands run at once by one smtlab (`pairs` measures a command while its partner
//! runs again and again): the clean-up after one run must never take the other's process
//! for something the first left behind. A process of its own binary, because the runner
//! is made the process's child subreaper and sole spawner here.

use smtlab::experiments::compare::runner::{self, Launch, OnSignal, Status};
use std::time::Duration;

/// `n` runs of a short command, each ending as its status, or as the runner's error.
fn loop_of(n: usize) -> Vec<Result<Status, String>> {
    let argv: Vec<String> = ["sh", "-c", "true"].iter().map(|s| s.to_string()).collect();
    (0..n)
        .map(|_| {
            runner::run(
                &Launch {
                    argv: &argv,
                    env: &[],
                    cpus: None,
                    cgroup_procs: None,
                    echo: false,
                    discard_stdout: false,
                    on_signal: OnSignal::Stop,
                    limit: Some(Duration::from_secs(20)),
                    counters: smtlab::counters::Mode::Off,
                },
                None,
            )
            .map(|f| f.status)
            .map_err(|e| format!("{e:#}"))
        })
        .collect()
}

#[test]
fn a_run_ending_beside_another_never_kills_the_other() {
    runner::become_subreaper();
    let all: Vec<Result<Status, String>> = std::thread::scope(|s| {
        let loops: Vec<_> = (0..4).map(|_| s.spawn(|| loop_of(300))).collect();
        loops.into_iter().flat_map(|l| l.join().unwrap()).collect()
    });
    let killed = all
        .iter()
        .filter(|r| !r.as_ref().is_ok_and(|st| st.success()))
        .collect::<Vec<_>>();
    assert!(
        killed.is_empty(),
        "{} of {} runs ended so: {killed:?}",
        killed.len(),
        all.len()
    );
}
