//! The latency the sandbox adds to starting a tool process: `true` through the supervisor
//! (re-exec, namespaces, private mounts, a cgroup per call, rlimits, Landlock, seccomp)
//! against `sh -c true` spawned directly
//! the way the shell tool did before, each the median of 200 runs after 10 warm-ups.
//! Also timed: the supervisor binary's bare start-up (`switchboard --version`), which is
//! part of the added cost and depends on the build profile. Run with
//! `cargo bench --bench sandbox_spawn` (figures go to BENCHMARKS.md); it takes seconds.

use std::time::{Duration, Instant};

use switchboard::sandbox::{Sandbox, SandboxConfig};

const RUNS: usize = 200;
const WARM_UP: usize = 10;

/// Median, 10th and 90th percentile of `runs` timings of `start`.
fn measure(
    rt: &tokio::runtime::Runtime,
    mut start: impl FnMut() -> tokio::process::Command,
) -> [Duration; 3] {
    let mut times = Vec::with_capacity(RUNS);
    for i in 0..WARM_UP + RUNS {
        let mut command = start();
        let began = Instant::now();
        let status = rt.block_on(async { command.spawn().unwrap().wait().await.unwrap() });
        assert!(status.success(), "{status}");
        if i >= WARM_UP {
            times.push(began.elapsed());
        }
    }
    times.sort();
    [times[RUNS / 2], times[RUNS / 10], times[RUNS * 9 / 10]]
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("workspaces/bench");
    std::fs::create_dir_all(&ws).unwrap();
    let direct = measure(&rt, || {
        let mut c = tokio::process::Command::new("sh");
        c.args(["-c", "true"]).current_dir(&ws).env_clear();
        c
    });
    println!(
        "{:<34} median {:>9.2?}  p10 {:>9.2?}  p90 {:>9.2?}",
        "direct sh -c true", direct[0], direct[1], direct[2]
    );
    // The supervisor is this binary: its bare start-up is part of the cost, shown apart.
    let bare = measure(&rt, || {
        let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"));
        c.arg("--version")
            .stdout(std::process::Stdio::null())
            .env_clear();
        c
    });
    println!(
        "{:<34} median {:>9.2?}  p10 {:>9.2?}  p90 {:>9.2?}",
        "switchboard --version (bare start)", bare[0], bare[1], bare[2]
    );
    // With and without a cgroup per call, so the cgroup step's own cost shows (where the
    // gateway cannot delegate one, both rows say "cgroups off" and match).
    for (namespaces, cgroups) in [(true, true), (true, false), (false, true)] {
        let config = SandboxConfig {
            supervisor: Some(env!("CARGO_BIN_EXE_switchboard").into()),
            namespaces,
            cgroups,
            ..SandboxConfig::default()
        };
        let sandbox = Sandbox::new(&config, dir.path());
        println!("posture: {}", sandbox.posture());
        let t = measure(&rt, || sandbox.command(&ws, "true", &[]).unwrap());
        let name = format!("sandboxed (ns {namespaces}, cgroups {cgroups})");
        println!(
            "{name:<34} median {:>9.2?}  p10 {:>9.2?}  p90 {:>9.2?}  added {:>9.2?}",
            t[0],
            t[1],
            t[2],
            t[0].saturating_sub(direct[0])
        );
    }
}
