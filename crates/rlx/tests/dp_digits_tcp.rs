//! Runs the `dp_digits` example over TCP with 4 ranks (rank 0 spawns the
//! other three as child processes) for 3 epochs: it must train past 80%
//! test accuracy and exit cleanly, children reaped.
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn dp_digits_over_tcp_with_four_ranks() {
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/dp_digits");
    assert!(
        bin.exists(),
        "{} is not built (cargo test builds examples)",
        bin.display()
    );
    let start = Instant::now();
    let out = Command::new(&bin)
        .args([
            "--transport",
            "tcp",
            "--world",
            "4",
            "--epochs",
            "3",
            "--min-accuracy",
            "0.8",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("4 ranks") && text.contains("test accuracy"),
        "{text}"
    );
    assert!(start.elapsed() < Duration::from_secs(300));
}
