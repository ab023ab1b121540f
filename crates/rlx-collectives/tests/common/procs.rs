//! Child processes of a test (shared with rlx-runtime's dist tests).

/// Children of this process that are zombies (state Z in /proc).
pub fn zombies() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) {
            // pid (comm) state ppid ...
            if let Some(rest) = stat.rsplit_once(") ").map(|x| x.1) {
                let f: Vec<&str> = rest.split(' ').collect();
                if f.len() > 1 && f[0] == "Z" && f[1] == me {
                    out.push(stat);
                }
            }
        }
    }
    out
}
