//! Switching SMT off and on safely: the state under a sysfs root (`state`), the writes that
//! change it (`plan`, pure), the journal that makes every change undoable (`journal`), the
//! writes themselves with their undo (`apply`), and `smt status` (`status`).
//!
//! Offlining a CPU resets the affinity of threads pinned only to it, and the kernel never
//! re-pins them; cgroup v1 cpusets drop offlined CPUs for good (Documentation/admin-guide/
//! cgroup-v1/cpusets.rst). So `off` lists such processes first, and the journal records the
//! state before any change so that `restore` can always put it back.

pub mod apply;
pub mod journal;
pub mod plan;
pub mod state;
pub mod status;
pub mod view;
