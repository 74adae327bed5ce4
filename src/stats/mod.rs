//! Statistics over samples: pure functions, no I/O, no clocks, no sentences. Numbers and
//! enums go out; the words for them (an effect's name, an interval's label and level, a
//! ratio's digits) are `render`'s.
//!
//! Laid out as criterion's `src/stats/` is, one method a file, each file opening with its
//! method and source:
//! - [`descriptive`]: mean, standard deviation, percentiles (type 7), median, MAD;
//! - [`outliers`]: Tukey's fences, counted and never dropped;
//! - [`summary`]: one sample's headline and spread as one value;
//! - [`fairness`]: Jain's index and the max/min ratio;
//! - [`rng`]: the seeded generator resampling and fake data draw from;
//! - [`bootstrap`]: percentile bootstrap intervals of a median and a ratio of medians;
//! - [`distributions`]: Student's t and the standard normal quantile;
//! - [`order_statistic`]: the distribution-free interval of a median;
//! - [`effect`]: the one vocabulary for what an interval says, and its thresholds;
//! - [`comparison`]: a ratio with its interval, runs and effect, as findings cite it.
//!
//! Pooling across hosts lives in `fleet::pool` and aggregation across answers in
//! `conclusion`, beside their callers.
//!
//! Empty input gives NaN (or `None` for [`Summary::of`]) rather than a panic: a report
//! shows "–" for a configuration that could not run.

pub mod bootstrap;
pub mod comparison;
#[cfg(test)]
mod coverage;
pub mod descriptive;
pub mod distributions;
pub mod effect;
pub mod fairness;
pub mod order_statistic;
pub mod outliers;
pub mod rng;
pub mod summary;

pub use bootstrap::{Ci, bootstrap_median, bootstrap_ratio_of_medians};
pub use comparison::{
    BOOTSTRAP_MIN_RUNS, Comparison, DEFAULT_ROUNDS, IntervalMethod, MIN_RUNS_FOR_CI,
};
pub use descriptive::{
    MAD_SCALE, cv, mad, max, mean, median, min, percentile, percentiles, stddev, upper_median,
};
pub use distributions::{normal_quantile, student_t_cdf, student_t_quantile};
pub use effect::{Better, Effect, Thresholds, classify};
pub use fairness::{jain, max_min_ratio};
pub use order_statistic::order_statistic_interval;
pub use outliers::{Fences, Outliers};
pub use rng::SplitMix64;
pub use summary::Summary;
