//! Starting `wgllm serve` (the built binary) on a free loopback port and stopping it.
use super::http;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const KEY: &str = "sk-wgllm-test";

/// The device the servers run on: `WGLLM_SERVER_DEVICE`, default `wgpu` (lavapipe in CI; a CPU
/// Vulkan driver is never picked without --device).
pub fn device() -> String {
    std::env::var("WGLLM_SERVER_DEVICE").unwrap_or_else(|_| "wgpu".into())
}

pub struct Server {
    child: Child,
    pub addr: String,
    pub log: Arc<Mutex<String>>,
}

impl Server {
    /// Starts `wgllm serve --port 0 ARGS` and waits until /health says ready.
    pub fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wgllm"))
            .args(["serve", "--host", "127.0.0.1", "--port", "0", "--device", &device()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting wgllm serve");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let err = child.stderr.take().unwrap();
        let l2 = log.clone();
        // drain stderr for the whole life of the process, so it never blocks on a full pipe
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if let Some(a) = line.strip_prefix("wgllm serve: listening on http://") {
                    let _ = tx.send(a.to_string());
                }
                l2.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no `listening on` line; stderr:\n{}", log.lock().unwrap()));
        let s = Server { child, addr, log };
        let t0 = Instant::now();
        loop {
            if let Ok(r) = http::request(&s.addr, "GET", "/health", None, b"") {
                if r.status == 200 {
                    break;
                }
                assert_eq!(r.status, 503, "/health while loading");
            }
            assert!(
                t0.elapsed() < Duration::from_secs(600),
                "not ready after 600 s; stderr:\n{}",
                s.log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        s
    }

    /// A gauge or counter from /metrics.
    pub fn metric(&self, name: &str) -> f64 {
        let r = http::get(&self.addr, "/metrics", None);
        r.body
            .lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("{name} not in /metrics:\n{}", r.body))
            .trim()
            .parse()
            .unwrap()
    }

    /// Waits until no sequence holds a KV block and nothing runs or waits (aborts land between steps).
    pub fn wait_kv_free(&self, within: Duration) -> Result<(), String> {
        let t0 = Instant::now();
        loop {
            let (used, run, wait) = (
                self.metric("wgllm_kv_blocks_used"),
                self.metric("wgllm_requests_running"),
                self.metric("wgllm_requests_waiting"),
            );
            if used == 0.0 && run == 0.0 && wait == 0.0 {
                return Ok(());
            }
            if t0.elapsed() > within {
                return Err(format!(
                    "KV not freed: {used} blocks used, {run} running, {wait} waiting"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, then the exit status (killed after `within`).
    pub fn terminate(&mut self, within: Duration) -> Option<ExitStatus> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let t0 = Instant::now();
        while t0.elapsed() < within {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Server {
    pub fn kill_now(&self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.child.id().to_string()])
            .status();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
