//! `contrib/ansible/smtlab.yml` run by `ansible-playbook -i localhost, -c local`: the binary
//! copied, a quick study run (asynchronously, polled), its results.json fetched and merged
//! on the controller, the study's and the fleet's Prometheus files written. Ansible's own
//! files (its home, temporary and async directories) go into the test's temporary directory.

use prometheus_parse::{Scrape, Value};
use smtlab::fleet::model::Fleet;
use std::path::PathBuf;
use std::process::Command;

/// Ends whatever the playbook left running under the test's directory (the async wrapper
/// detaches the study from ansible-playbook, so a failed or interrupted run can leave it
/// going) before the directory is removed.
struct Leftovers(PathBuf);

impl Drop for Leftovers {
    fn drop(&mut self) {
        let ended = super::procs::end_mentioning(&self.0, std::time::Duration::from_secs(10));
        if !ended.is_empty() {
            eprintln!("ansible test cleanup: ended pids {ended:?}");
        }
    }
}

fn gauges(path: &std::path::Path) -> Scrape {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let s = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    assert!(!s.samples.is_empty(), "{text}");
    assert!(s.samples.iter().all(|x| matches!(x.value, Value::Gauge(_))));
    s
}

#[test]
fn the_ansible_playbook_studies_localhost_and_merges_on_the_controller() {
    let _one = super::one_at_a_time();
    if !super::have(
        super::skip::Need::Ansible,
        "ansible-playbook",
        &["--version"],
        "ansible-core (apt-get install ansible-core)",
    ) {
        return;
    }
    let tmp = tempfile::Builder::new()
        .prefix("smtlab-ansible-")
        .tempdir()
        .unwrap();
    let t = tmp.path();
    // Dropped before `tmp`: processes first, then the directory.
    let _leftovers = Leftovers(t.to_path_buf());
    let home = t.join("home");
    std::fs::create_dir_all(&home).unwrap();
    // An empty configuration, so /etc/ansible/ansible.cfg on the machine changes nothing.
    std::fs::write(t.join("ansible.cfg"), "").unwrap();
    let bin = super::smtlab_bin();
    let arg = |k: &str, v: &std::path::Path| format!("{k}={}", v.display());
    // The command README's Fleet section shows, with this test's directories.
    let o = Command::new("ansible-playbook")
        .args(["-i", "localhost,", "-c", "local"])
        .arg(super::repo().join("contrib/ansible/smtlab.yml"))
        .args(["-e", &arg("smtlab_binary", &bin)])
        .args(["-e", "smtlab_quick=true"])
        .args(["-e", &arg("smtlab_remote_dir", &t.join("remote"))])
        .args(["-e", &arg("smtlab_fetch_dir", &t.join("fleet"))])
        .args([
            "-e",
            &arg("smtlab_prometheus", &t.join("remote/smtlab.prom")),
        ])
        .args([
            "-e",
            &arg("smtlab_merge_prometheus", &t.join("fleet/fleet.prom")),
        ])
        .current_dir(t)
        .env("HOME", &home)
        .env("ANSIBLE_CONFIG", t.join("ansible.cfg"))
        .env("ANSIBLE_LOCAL_TEMP", t.join("ansible-local"))
        .env("ANSIBLE_REMOTE_TEMP", t.join("ansible-remote"))
        .env("ANSIBLE_ASYNC_DIR", t.join("ansible-async"))
        .env("ANSIBLE_NOCOLOR", "1")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    println!("{out}");
    assert!(o.status.success(), "ansible-playbook failed:\n{out}\n{err}");
    assert!(out.contains("failed=0"), "{out}");
    // On the "remote" host: a working directory private to the user, the binary and the
    // study's files removed afterwards (the --prometheus file is kept); its results.json on
    // the controller.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(t.join("remote"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "the working directory is private");
    assert!(
        !t.join("remote/smtlab").exists(),
        "the binary copied is removed"
    );
    assert!(
        !t.join("remote/out").exists(),
        "the study's files are removed"
    );
    let fetched = t.join("fleet/hosts/localhost/results.json");
    let r = smtlab::report::Report::from_json(&std::fs::read_to_string(&fetched).unwrap()).unwrap();
    assert!(r.study.quick);
    let study = gauges(&t.join("remote/smtlab.prom"));
    assert!(
        study
            .samples
            .iter()
            .any(|s| s.metric == "smtlab_answer" && s.labels.get("class") == Some("compute"))
    );
    // The merged report: one host, the machine the playbook ran on.
    let f: Fleet =
        serde_json::from_str(&std::fs::read_to_string(t.join("fleet/merged/fleet.json")).unwrap())
            .unwrap();
    assert_eq!(f.hosts, 1);
    assert_eq!(f.types[0].hosts[0].host, super::hostname());
    assert!(
        t.join("fleet/merged/fleet.md").is_file() && t.join("fleet/merged/fleet.html").is_file()
    );
    assert!(
        out.contains("grouping key:"),
        "merge's summary shown: {out}"
    );
    let fleet = gauges(&t.join("fleet/fleet.prom"));
    assert!(
        fleet
            .samples
            .iter()
            .any(|s| s.metric == "smtlab_fleet_answer")
    );
    println!("merged: {}", f.types[0].headline);
    // Ansible's async wrapper watches the job from a process of its own that polls every
    // few seconds (its `step`), so it may outlive the playbook by a poll: give it 20 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !super::procs::mentioning(t).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let left: Vec<String> = super::procs::mentioning(t)
        .iter()
        .map(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            format!("{p}: {}", String::from_utf8_lossy(&cmd).replace('\0', " "))
        })
        .collect();
    assert!(
        left.is_empty(),
        "nothing the playbook started is still running 20 s after it ended: {left:?}"
    );
}
