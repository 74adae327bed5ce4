//! What Slurm gave the study: the job and step, the node as Slurm names it, and the CPUs
//! the step could use (its cgroup cpuset and affinity mask, as the topology read them).
//!
//! slurmd exports `SLURM_*` variables into every job step's environment (sbatch(1) and
//! srun(1), "OUTPUT ENVIRONMENT VARIABLES"); the CPUs come from the step's cgroup
//! (`task/cgroup` with `ConstrainCores=yes`, cgroup.conf(5)) or, with `task/affinity`
//! alone, from the affinity mask slurmstepd set. [`from_env`] is pure: the study passes
//! its environment in.

use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Variables kept at most; a step has a few dozen.
const MAX_VARIABLES: usize = 512;
/// Characters kept of one value (node lists of large jobs can be long).
const MAX_VALUE_CHARS: usize = 1024;

/// The Slurm job step a study ran in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlurmJob {
    /// `SLURM_JOB_ID`.
    pub job_id: String,
    /// `SLURM_STEP_ID`; None in the batch script itself.
    pub step_id: Option<String>,
    /// `SLURMD_NODENAME`: the node as slurm.conf names it.
    pub node: Option<String>,
    /// CPUs the study could use: online ∩ cgroup cpuset ∩ affinity, as a list.
    pub usable_cpus: String,
    /// The step's cgroup cpuset, as a list, when one was found.
    pub cgroup_cpus: Option<String>,
    /// The cgroup file that gave `cgroup_cpus`.
    pub cgroup_source: Option<String>,
    /// The affinity mask (`sched_getaffinity`), as a list.
    pub affinity: Option<String>,
    /// Every `SLURM_*` and `SLURMD_*` variable of the study's environment, by name (values
    /// longer than 1024 characters end in `…`).
    pub variables: BTreeMap<String, String>,
}

impl SlurmJob {
    /// `job 12 step 0 on node n1: CPUs 0-1 (cgroup cpuset 0-1 from …; affinity 0-1)`.
    pub fn sentence(&self) -> String {
        let mut s = format!("job {}", self.job_id);
        if let Some(step) = &self.step_id {
            s.push_str(&format!(" step {step}"));
        }
        if let Some(n) = &self.node {
            s.push_str(&format!(" on node {n}"));
        }
        s.push_str(&format!(": CPUs {} usable", self.usable_cpus));
        let mut how = Vec::new();
        if let Some(c) = &self.cgroup_cpus {
            how.push(match &self.cgroup_source {
                Some(src) => format!("cgroup cpuset {c} from {src}"),
                None => format!("cgroup cpuset {c}"),
            });
        }
        if let Some(a) = &self.affinity {
            how.push(format!("affinity {a}"));
        }
        if !how.is_empty() {
            s.push_str(&format!(" ({})", how.join("; ")));
        }
        s
    }
}

/// The Slurm step described by `vars` (the process environment) and `topo` (read in that
/// step); None when `SLURM_JOB_ID` is not set, i.e. outside Slurm.
pub fn from_env(
    vars: impl IntoIterator<Item = (String, String)>,
    topo: &Topology,
) -> Option<SlurmJob> {
    let mut variables = BTreeMap::new();
    for (k, v) in vars {
        if !(k.starts_with("SLURM_") || k.starts_with("SLURMD_")) {
            continue;
        }
        if variables.len() >= MAX_VARIABLES && !variables.contains_key(&k) {
            continue;
        }
        let v = if v.chars().count() > MAX_VALUE_CHARS {
            v.chars().take(MAX_VALUE_CHARS - 1).collect::<String>() + "…"
        } else {
            v
        };
        variables.insert(k, v);
    }
    let job_id = variables
        .get("SLURM_JOB_ID")
        .or_else(|| variables.get("SLURM_JOBID"))?
        .clone();
    Some(SlurmJob {
        job_id,
        step_id: variables.get("SLURM_STEP_ID").cloned(),
        node: variables.get("SLURMD_NODENAME").cloned(),
        usable_cpus: topo.allowed().to_string(),
        cgroup_cpus: topo.process.cgroup_cpus.as_ref().map(|c| c.to_string()),
        cgroup_source: topo.process.cgroup_source.clone(),
        affinity: topo.process.affinity.as_ref().map(|c| c.to_string()),
        variables,
    })
}

/// This process's environment as UTF-8 pairs (non-UTF-8 bytes replaced).
pub fn environment() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().map(|(k, v)| {
        (
            k.to_string_lossy().into_owned(),
            v.to_string_lossy().into_owned(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::CpuSet;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn outside_slurm_there_is_no_job() {
        let t = crate::topology::fixture::topology(2, 2, false);
        assert_eq!(from_env(vars(&[("HOME", "/root")]), &t), None);
        // A variable of another tool that starts alike is not Slurm's job.
        assert_eq!(from_env(vars(&[("SLURMISH", "1")]), &t), None);
    }

    #[test]
    fn a_step_records_its_job_node_cpus_and_only_slurm_variables() {
        let mut t = crate::topology::fixture::topology(4, 2, false);
        t.process.cgroup_cpus = Some(CpuSet::from_cpus([0, 1, 4, 5]));
        t.process.cgroup_source =
            Some("sys/fs/cgroup/cpuset/slurm/uid_0/job_7/step_0/cpuset.cpus".into());
        let long = "x".repeat(5000);
        let j = from_env(
            vars(&[
                ("SLURM_JOB_ID", "7"),
                ("SLURM_STEP_ID", "0"),
                ("SLURMD_NODENAME", "n1"),
                ("SLURM_CPUS_ON_NODE", "4"),
                ("SLURM_JOB_NODELIST", &long),
                ("PATH", "/usr/bin"),
            ]),
            &t,
        )
        .unwrap();
        assert_eq!(j.job_id, "7");
        assert_eq!(j.node.as_deref(), Some("n1"));
        assert_eq!(j.usable_cpus, "0-1,4-5");
        assert_eq!(j.cgroup_cpus.as_deref(), Some("0-1,4-5"));
        assert!(!j.variables.contains_key("PATH"));
        assert_eq!(j.variables["SLURM_CPUS_ON_NODE"], "4");
        assert_eq!(j.variables["SLURM_JOB_NODELIST"].chars().count(), 1024);
        assert!(j.variables["SLURM_JOB_NODELIST"].ends_with('…'));
        let s = j.sentence();
        assert!(s.starts_with("job 7 step 0 on node n1: CPUs 0-1,4-5 usable (cgroup cpuset 0-1,4-5 from sys/fs/cgroup/cpuset/slurm/uid_0/job_7/step_0/cpuset.cpus"), "{s}");
    }

    #[test]
    fn the_report_shows_the_job_in_its_machine_table_and_every_variable() {
        let topo = crate::topology::fixture::topology(2, 2, false);
        let mut r = crate::report::Report::new(
            false,
            crate::report::Provenance {
                smtlab_version: "0".into(),
                git_revision: "0".into(),
                build_profile: "release".into(),
                command: "smtlab study".into(),
                started_unix_s: 0,
                wall_ns: 0,
            },
            crate::report::machine::summary(&topo),
            topo.clone(),
            crate::report::StudySettings {
                quick: true,
                budget_ns: 0,
                estimate_ns: 0,
                db: "sqlite".into(),
            },
        );
        r.slurm = from_env(
            vars(&[
                ("SLURM_JOB_ID", "7"),
                ("SLURMD_NODENAME", "n1"),
                ("SLURM_CPUS_ON_NODE", "4"),
            ]),
            &topo,
        );
        let md = crate::report::markdown::render(&r);
        assert!(
            md.contains("| Slurm | job 7 on node n1: CPUs 0-3 usable"),
            "{md}"
        );
        assert!(md.contains("| SLURM_CPUS_ON_NODE | 4 |"), "{md}");
        let html = crate::report::html::render(&r);
        assert!(html.contains("SLURM_CPUS_ON_NODE"));
        // Outside Slurm neither appears.
        r.slurm = None;
        assert!(!crate::report::markdown::render(&r).contains("SLURM_"));
    }
}
