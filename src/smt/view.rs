//! `smtlab smt status`'s text view. Pure.

use super::status::*;

/// `smtlab smt status` as text.
pub fn status_text(s: &SmtStatus) -> String {
    let mut out = String::new();
    let line = |out: &mut String, k: &str, v: String| {
        out.push_str(&format!("{k:<20}{v}\n"));
    };
    let control = match s.control.as_deref() {
        None => "missing (this kernel has no SMT control)".to_string(),
        Some(c) if s.cmt_modules && matches!(c, "on" | "off") => format!(
            "{c} (the kernel counts CMT modules as SMT: `off` would take integer cores \
             offline)"
        ),
        Some(c) => format!("{c}{}", control_meaning(c)),
    };
    line(&mut out, "smt/control", control);
    if s.cmt_modules {
        line(
            &mut out,
            "SMT",
            format!(
                "none: the sibling pairs below are {}; each CPU is a core of its own",
                crate::topology::CMT_MODULES
            ),
        );
    }
    line(
        &mut out,
        "smt/active",
        match s.active {
            Some(true) => "1 (some core runs two or more threads)".into(),
            Some(false) => "0 (every core runs one thread)".into(),
            None => "unknown".into(),
        },
    );
    let shared = s.cores.iter().filter(|c| c.online.len() > 1).count();
    let unit = if s.cmt_modules { "module" } else { "core" };
    if s.cmt_modules {
        line(
            &mut out,
            "CMT modules",
            format!(
                "{}, {} with both integer cores online; online CPUs {} (each a core)",
                s.cores.len(),
                shared,
                s.online
            ),
        );
    } else {
        line(
            &mut out,
            "cores",
            format!(
                "{}, {} with more than one thread online; online CPUs {}",
                s.cores.len(),
                shared,
                s.online
            ),
        );
    }
    for c in &s.cores {
        let mut v = format!("online {}", c.online);
        if !c.offline.is_empty() {
            v.push_str(&format!(", offline {}", c.offline));
        }
        line(&mut out, &format!("  {unit} {}", c.core), v);
    }
    if !s.offline.is_empty() {
        let mut v = s.offline.to_string();
        if !s.offline_core_unknown.is_empty() {
            v.push_str(&format!(
                " (the core of {} is not known: the kernel hides an offline CPU's topology)",
                s.offline_core_unknown
            ));
        }
        line(&mut out, "offline CPUs", v);
    }
    if !s.cannot_go_offline.is_empty() {
        line(
            &mut out,
            "cannot go offline",
            format!(
                "{} {} (no online file)",
                if s.cannot_go_offline.len() == 1 {
                    "CPU"
                } else {
                    "CPUs"
                },
                s.cannot_go_offline
            ),
        );
    }
    line(
        &mut out,
        "kernel cmdline",
        if s.cmdline_nosmt.is_empty() {
            "no nosmt".into()
        } else {
            s.cmdline_nosmt.join(" ")
        },
    );
    if s.vulnerabilities.is_empty() {
        line(&mut out, "vulnerabilities", "none mentions SMT".into());
    } else {
        line(&mut out, "vulnerabilities", "mentioning SMT:".into());
        for v in &s.vulnerabilities {
            line(&mut out, &format!("  {}", v.name), v.status.clone());
        }
    }
    line(&mut out, "this process", s.privileges.summary.clone());
    match &s.journal {
        None => match &s.journal_unreadable {
            Some(p) => line(
                &mut out,
                "journal",
                format!(
                    "not known: this user may not read {p} (`sudo smtlab smt status` shows it)"
                ),
            ),
            None => line(&mut out, "journal", "none (nothing to restore)".into()),
        },
        Some(j) => {
            let who = if j.writer_running {
                format!("smtlab pid {} (still running)", j.pid)
            } else {
                format!("smtlab pid {} (gone)", j.pid)
            };
            let what = if j.earlier_boot {
                "from an earlier boot: nothing to restore".to_string()
            } else {
                format!(
                    "`smtlab smt restore` puts back online {}, smt/control {}",
                    j.online,
                    j.control.as_deref().unwrap_or("missing")
                )
            };
            line(
                &mut out,
                "journal",
                format!("{} by {who} before `smt {}`: {what}", j.path, j.command),
            );
        }
    }
    out
}

fn control_meaning(c: &str) -> &'static str {
    match c {
        "on" => " (SMT enabled; the kernel can switch it: smtlab smt off)",
        "off" => " (SMT disabled at run time: smtlab smt on)",
        "forceoff" => " (SMT disabled for good at boot: nosmt=force)",
        "notsupported" => " (this CPU or VM shows no SMT to the kernel)",
        "notimplemented" => " (this architecture has no SMT control; cpuN/online still works)",
        _ => "",
    }
}
