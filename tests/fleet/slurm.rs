//! `contrib/slurm` on a real one-node Slurm cluster: munged, slurmctld and slurmd started
//! here on localhost with their configuration, keys, state and logs in a temporary
//! directory (nothing under /etc is read or written), the recipe submitted with `--quick`,
//! and the merged report read back. On cgroup v1 machines the node uses task/cgroup, so
//! each study runs in a Slurm cpuset cgroup as on a production cluster; the cgroup
//! directories slurmd leaves behind are removed. Every daemon and process of the cluster is
//! stopped on every exit path, and the test checks that none is left.

use super::procs::{Daemon, exists, named_since, uptime_s, with_environment};
use smtlab::fleet::model::Fleet;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A one-node cluster on localhost.
struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    /// munged, slurmctld, slurmd, in the order started (stopped in reverse).
    daemons: Vec<Daemon>,
    /// Slurm cgroup directories that existed before the cluster started.
    cgroups_before: BTreeSet<PathBuf>,
    /// Whether the node confines steps with task/cgroup.
    cgroup: bool,
    node: String,
    /// Every pid of the cluster `stop` saw (daemons, their helpers, job steps).
    seen: Vec<u32>,
    /// When it started, seconds since boot.
    started_s: f64,
}

/// A TCP port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Cgroup directories named `slurm*` at the top of each v1 hierarchy (slurmd's cgroup/v1
/// plugin makes `slurm` or `slurm_<node>` there).
fn slurm_cgroups() -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let Ok(hier) = std::fs::read_dir("/sys/fs/cgroup") else {
        return out;
    };
    for h in hier.flatten() {
        let Ok(inner) = std::fs::read_dir(h.path()) else {
            continue;
        };
        for d in inner.flatten() {
            if d.file_name().to_string_lossy().starts_with("slurm") && d.path().is_dir() {
                out.insert(d.path());
            }
        }
    }
    out
}

/// Removes a cgroup directory and its children, deepest first (cgroupfs removes only empty
/// groups, with rmdir).
fn rmdir_tree(p: &Path) -> std::io::Result<()> {
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                rmdir_tree(&e.path())?;
            }
        }
    }
    std::fs::remove_dir(p)
}

/// Whether steps can be confined by task/cgroup here: a writable cgroup v1 cpuset
/// hierarchy (Slurm 22.05's cgroup/v2 plugin needs systemd's D-Bus, absent in CI).
fn cgroup_v1_cpuset() -> bool {
    let p = Path::new("/sys/fs/cgroup/cpuset");
    p.join("cgroup.procs").exists() && p.join("cpuset.cpus").exists()
}

impl Cluster {
    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf).current_dir(&self.dir);
        c
    }

    fn start(dir: &Path) -> Result<Cluster, String> {
        // The socket's directory must be searchable by munge clients (all root here).
        std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o711))
            .map_err(|e| e.to_string())?;
        let run = |args: &[&str]| -> Result<String, String> {
            let o = Command::new(args[0])
                .args(&args[1..])
                .output()
                .map_err(|e| format!("{}: {e}", args[0]))?;
            Ok(String::from_utf8_lossy(&o.stdout).into_owned())
        };
        // `slurmd -C` prints this node's line for slurm.conf (CPUs, sockets, memory).
        let node_line = run(&["slurmd", "-C"])?
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        let node = node_line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("NodeName="))
            .ok_or_else(|| format!("no NodeName in `slurmd -C`: {node_line}"))?
            .to_string();
        let mut c = Cluster {
            dir: dir.to_path_buf(),
            conf: dir.join("slurm.conf"),
            daemons: Vec::new(),
            cgroups_before: slurm_cgroups(),
            cgroup: cgroup_v1_cpuset(),
            node: node.clone(),
            seen: Vec::new(),
            started_s: uptime_s(),
        };
        let key = dir.join("munge.key");
        let mut k = vec![0u8; 1024];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut k))
            .map_err(|e| e.to_string())?;
        std::fs::write(&key, &k).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .map_err(|e| e.to_string())?;
        let sock = dir.join("munge.sock");
        let mut munged = Command::new("munged");
        munged
            .current_dir(dir)
            .arg("--foreground")
            .arg("--force")
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--socket={}", sock.display()))
            .arg(format!("--pid-file={}", dir.join("munged.pid").display()))
            .arg(format!("--log-file={}", dir.join("munged.log").display()))
            .arg(format!("--seed-file={}", dir.join("munged.seed").display()));
        c.daemons
            .push(Daemon::start("munged", munged, &dir.join("munged.out"))?);
        c.wait_for("munged's socket", Duration::from_secs(20), |_| {
            sock.exists()
        })?;
        let (ctld_port, d_port) = (free_port(), free_port());
        for sub in ["state", "spool"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| e.to_string())?;
        }
        let (proctrack, task) = if c.cgroup {
            ("proctrack/cgroup", "task/cgroup,task/affinity")
        } else {
            ("proctrack/linuxproc", "task/affinity")
        };
        let d = dir.display();
        let conf = format!(
            "ClusterName=smtlabtest\nSlurmctldHost={node}(127.0.0.1)\nSlurmctldPort={ctld_port}\n\
             SlurmdPort={d_port}\nSlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\n\
             AuthInfo=socket={sock}\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
             ProctrackType={proctrack}\nTaskPlugin={task}\nSelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\nSchedulerType=sched/backfill\n\
             JobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\n\
             JobAcctGatherType=jobacct_gather/none\nMpiDefault=none\nReturnToService=2\n\
             {node_line} NodeAddr=127.0.0.1 State=UNKNOWN\n\
             PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            sock = sock.display(),
        );
        std::fs::write(&c.conf, conf).map_err(|e| e.to_string())?;
        std::fs::write(
            dir.join("cgroup.conf"),
            "CgroupPlugin=cgroup/v1\nConstrainCores=yes\n",
        )
        .map_err(|e| e.to_string())?;
        let mut ctld = c.cmd("slurmctld");
        ctld.arg("-D");
        c.daemons.push(Daemon::start(
            "slurmctld",
            ctld,
            &dir.join("slurmctld.out"),
        )?);
        let mut slurmd = c.cmd("slurmd");
        slurmd.arg("-D");
        c.daemons
            .push(Daemon::start("slurmd", slurmd, &dir.join("slurmd.out"))?);
        c.wait_for("the node to be idle", Duration::from_secs(90), |c| {
            c.output(&["sinfo", "-h", "-o", "%T"]).trim() == "idle"
        })?;
        Ok(c)
    }

    /// A client command's stdout (empty on failure).
    fn output(&self, args: &[&str]) -> String {
        self.cmd(args[0])
            .args(&args[1..])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    fn wait_for(
        &mut self,
        what: &str,
        limit: Duration,
        ok: impl Fn(&Cluster) -> bool,
    ) -> Result<(), String> {
        let t = Instant::now();
        while t.elapsed() < limit {
            if ok(self) {
                return Ok(());
            }
            if super::interrupted() {
                return Err(format!("interrupted while waiting for {what}"));
            }
            let dead = self
                .daemons
                .iter_mut()
                .filter_map(|d| (!d.alive()).then(|| d.name.clone()))
                .next();
            if let Some(name) = dead {
                return Err(format!(
                    "{name} exited while waiting for {what}:\n{}",
                    self.logs()
                ));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Err(format!(
            "{what}: not within {} s\n{}",
            limit.as_secs(),
            self.logs()
        ))
    }

    /// The daemons' logs, for a failure message.
    fn logs(&self) -> String {
        let mut s = String::new();
        for f in [
            "munged.out",
            "munged.log",
            "slurmctld.out",
            "slurmctld.log",
            "slurmd.out",
            "slurmd.log",
        ] {
            let text = std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            s.push_str(&format!("--- {f} (last lines)\n"));
            for l in tail.iter().rev() {
                s.push_str(l);
                s.push('\n');
            }
        }
        s
    }

    /// Cancels every job, stops the daemons, ends anything of the cluster still running
    /// and removes the cgroups slurmd made. Returns what it had to clean up by force (empty
    /// when the cluster shut down on its own). Safe to call twice.
    fn stop(&mut self) -> Vec<String> {
        let mut forced = Vec::new();
        if self.daemons.is_empty() {
            return forced;
        }
        let _ = self
            .cmd("scancel")
            .arg("--full")
            .arg("--user=root")
            .output();
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(30)
            && !self.output(&["squeue", "-h", "-o", "%i"]).trim().is_empty()
        {
            std::thread::sleep(Duration::from_millis(250));
        }
        // Every process of the cluster carries its SLURM_CONF: the daemons' helpers
        // (slurmscriptd), each job step's slurmstepd, the jobs. A slurmstepd finishes its
        // step's teardown after the job has left the queue: give the steps time to end
        // before slurmd goes.
        let needle = format!("SLURM_CONF={}", self.conf.display());
        let steps = || {
            with_environment(&needle)
                .into_iter()
                .filter(|(_, comm)| comm == "slurmstepd")
                .count()
        };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(30) && steps() > 0 {
            std::thread::sleep(Duration::from_millis(250));
        }
        let mut seen: Vec<u32> = with_environment(&needle).iter().map(|p| p.0).collect();
        while let Some(mut d) = self.daemons.pop() {
            seen.extend(d.pid());
            if let Some(how) = d.stop(Duration::from_secs(15))
                && how.starts_with("killed")
            {
                forced.push(format!("{} {how}", d.name));
            }
        }
        // Anything still carrying the cluster's SLURM_CONF outlived it: end it by pid.
        for (pid, comm) in with_environment(&needle) {
            forced.push(format!("{comm} (pid {pid}) outlived the cluster"));
            seen.push(pid);
            // SAFETY: kill(2) on a process of the cluster this test started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        // Wait for every process the cluster had to be gone, reaped included (an orphan
        // is reaped by init, a moment after it exits).
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) && seen.iter().any(|&p| exists(p)) {
            std::thread::sleep(Duration::from_millis(100));
        }
        for p in seen.iter().filter(|&&p| exists(p)) {
            forced.push(format!("pid {p} of the cluster still exists"));
        }
        // Steps that exited before they could be seen above linger as zombies until init
        // reaps them (nothing else here runs Slurm): wait for that; a step still running
        // is a failure, an exited one init has not reaped yet is only reported.
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10)
            && !named_since("slurmstepd", self.started_s).is_empty()
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        for (p, state) in named_since("slurmstepd", self.started_s) {
            if state == 'Z' {
                eprintln!("slurmstepd pid {p} has exited; init has not reaped it yet");
            } else {
                forced.push(format!("slurmstepd pid {p} still running (state {state})"));
            }
        }
        self.seen = seen;
        // A cgroup whose last task was just killed is removable once the kernel has
        // reaped it: try for a few seconds.
        let t = Instant::now();
        loop {
            let left: Vec<PathBuf> = slurm_cgroups()
                .difference(&self.cgroups_before)
                .cloned()
                .collect();
            let errors: Vec<String> = left
                .iter()
                .filter_map(|cg| {
                    rmdir_tree(cg)
                        .err()
                        .map(|e| format!("cgroup {} not removed: {e}", cg.display()))
                })
                .collect();
            if errors.is_empty() || t.elapsed() > Duration::from_secs(5) {
                forced.extend(errors);
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        forced
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let forced = self.stop();
        if !forced.is_empty() {
            eprintln!("slurm test cleanup: {}", forced.join("; "));
        }
    }
}

/// `scontrol show job ID`'s JobState.
fn job_state(c: &Cluster, id: &str) -> String {
    c.output(&["scontrol", "show", "job", id])
        .split_whitespace()
        .find_map(|w| w.strip_prefix("JobState="))
        .unwrap_or("gone")
        .to_string()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| format!("({}: {e})", p.display()))
}

#[test]
fn the_slurm_recipe_studies_the_node_and_merges_its_report() {
    let _one = super::one_at_a_time();
    for (p, probe) in [
        ("munged", "--version"),
        ("slurmctld", "-V"),
        ("slurmd", "-V"),
        ("sbatch", "--version"),
    ] {
        if !super::have(
            super::skip::Need::Slurm,
            p,
            &[probe],
            "slurm-wlm and munge (apt-get install slurm-wlm munge)",
        ) {
            return;
        }
    }
    let tmp = tempfile::Builder::new()
        .prefix("smtlab-slurm-")
        .tempdir()
        .unwrap();
    let dir = tmp.path().to_path_buf();
    let mut cluster = Cluster::start(&dir).unwrap_or_else(|e| panic!("{e}"));
    let pids: Vec<u32> = cluster.daemons.iter().filter_map(Daemon::pid).collect();
    println!(
        "one-node cluster up: node {}, steps confined by {}",
        cluster.node,
        if cluster.cgroup {
            "task/cgroup (cgroup v1 cpuset)"
        } else {
            "task/affinity"
        }
    );
    let fleet_dir = dir.join("fleet");
    // The command README's Fleet section shows.
    let submit = cluster
        .cmd("bash")
        .arg(super::repo().join("contrib/slurm/submit.sh"))
        .args(["--", "--quick"])
        .env("SMTLAB_FLEET_DIR", &fleet_dir)
        .env("SMTLAB", super::smtlab_bin())
        .current_dir(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&submit.stdout).into_owned();
    assert!(
        submit.status.success(),
        "submit.sh: {out}{}",
        String::from_utf8_lossy(&submit.stderr)
    );
    let ids: Vec<String> = out
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(_, v)| v.to_string())
        .collect();
    assert_eq!(ids.len(), 2, "study=ID merge=ID: {out}");
    let (study, merge) = (ids[0].clone(), ids[1].clone());
    println!("submitted: study job {study}, merge job {merge}");
    let waited = cluster.wait_for("both jobs to finish", Duration::from_secs(600), |c| {
        let q = c.output(&["squeue", "-h", "-o", "%i"]);
        !q.split_whitespace().any(|j| j == study || j == merge)
    });
    let study_out = read(&dir.join(format!("smtlab-study-{study}.out")));
    let merge_out = read(&dir.join(format!("smtlab-merge-{merge}.out")));
    waited.unwrap_or_else(|e| panic!("{e}\nstudy job:\n{study_out}\nmerge job:\n{merge_out}"));
    println!("study job output:\n{study_out}\nmerge job output:\n{merge_out}");
    assert_eq!(job_state(&cluster, &study), "COMPLETED", "{study_out}");
    assert_eq!(job_state(&cluster, &merge), "COMPLETED", "{merge_out}");

    // The node's study recorded what Slurm gave it.
    let results = fleet_dir
        .join("hosts")
        .join(&cluster.node)
        .join("results.json");
    let r = smtlab::report::Report::from_json(&read(&results)).unwrap();
    let j = r.slurm.as_ref().expect("the study ran inside a Slurm job");
    assert_eq!(j.job_id, study);
    assert_eq!(j.node.as_deref(), Some(cluster.node.as_str()));
    assert_eq!(j.variables.get("SLURM_JOB_ID"), Some(&study));
    assert_eq!(j.usable_cpus, r.machine.usable_cpus);
    if cluster.cgroup {
        let src = j.cgroup_source.as_deref().unwrap_or("");
        assert!(
            src.contains("slurm") && src.contains(&format!("job_{study}")),
            "the study read its Slurm cgroup: {j:?}"
        );
    }
    println!("Slurm gave the study: {}", j.sentence());

    // The merged report's host row is the node.
    let merged = fleet_dir.join("merged");
    let f: Fleet = serde_json::from_str(&read(&merged.join("fleet.json"))).unwrap();
    assert_eq!((f.hosts, f.slurm_hosts), (1, 1), "{merge_out}");
    let row = &f.types[0].hosts[0];
    assert_eq!(row.host, super::hostname());
    assert_eq!(row.host, cluster.node);
    assert!(
        row.slurm
            .as_deref()
            .is_some_and(|s| s.starts_with(&format!("job {study}"))),
        "{row:?}"
    );
    let md = read(&merged.join("fleet.md"));
    assert!(md.contains("### Slurm"), "{md}");
    assert!(
        md.contains("--hint=nomultithread") || md.contains("no Slurm hint"),
        "the Slurm form of the advice, or why there is none: {md}"
    );
    assert!(merged.join("fleet.html").is_file());
    assert!(merge_out.contains(&format!("grouping key: {}", f.types[0].label)));

    // Every daemon gone, nothing of the cluster left running, the cgroups it made removed.
    let forced = cluster.stop();
    assert!(forced.is_empty(), "had to clean up by force: {forced:?}");
    for pid in pids.iter().chain(&cluster.seen) {
        assert!(!exists(*pid), "pid {pid} of the cluster still exists");
    }
    let running: Vec<(u32, char)> = named_since("slurmstepd", cluster.started_s)
        .into_iter()
        .filter(|(_, state)| *state != 'Z')
        .collect();
    assert!(running.is_empty(), "slurmstepd still running: {running:?}");
    let needle = format!("SLURM_CONF={}", cluster.conf.display());
    assert!(with_environment(&needle).is_empty());
    assert!(
        slurm_cgroups().difference(&cluster.cgroups_before).count() == 0,
        "slurm cgroups left: {:?}",
        slurm_cgroups()
    );
    println!("munged, slurmctld and slurmd stopped; no process or cgroup of the cluster left");
}
