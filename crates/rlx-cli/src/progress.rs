//! `indicatif` progress bars and spinners, drawn on stderr (hidden when
//! stderr is not a terminal, so scripts and tests see clean output).

use indicatif::{ProgressBar, ProgressStyle};
use std::time::Duration;

/// A bar over `len` steps with a message.
pub fn bar(len: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_prefix(what.to_string());
    pb
}

/// A spinner for a step of unknown length.
pub fn spinner(what: &str) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.set_message(what.to_string());
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}
