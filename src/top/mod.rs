//! `smtlab top`: per logical CPU and per core utilisation over an interval.
//!
//! `/proc/stat` counts time per logical CPU, so on an SMT machine "50 % CPU" can mean every
//! core half busy or one busy thread on every core, which already uses most of each core's
//! throughput. `top` bounds each core's busy and both-busy time from its siblings' shares
//! (`cores`), and with tracefs (root) measures them exactly from `sched_switch` (`trace`),
//! then states the capacity left in cores' worth at an SMT yield. `sample` reads procfs,
//! `model` builds the one serde model per interval (pure), `view` draws it.

pub mod cores;
pub mod model;
pub mod sample;
pub mod trace;
pub mod view;
