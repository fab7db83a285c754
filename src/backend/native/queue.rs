//! Deferred launches, replayed through graphs, and asynchronous read-backs: the part of a native
//! [`Device`](super::device::Device) that makes a decode step one submit.
//!
//! `launch` only queues a kernel here. Anything that must see the device in order (an upload, a
//! download, a free, a sync, a read-back) first submits the queue: a short queue as plain
//! launches, a long one (a model step) recorded by stream capture into a graph and launched as
//! one. A graph of the same kernels in the same order as an earlier one updates that one's
//! instantiation in place (new arguments and grids: the positions, lengths and buffers of this
//! step) instead of instantiating again, so a decode step pays one graph launch on the device and
//! no per-kernel launch latency. CUDA and HIP take the same path (stream capture, exec update).
//!
//! A read-back (`read_start`) submits the queue, then queues a copy into page-locked host memory
//! and an event behind it; `read_finish` waits on that event only, so the host records the next
//! step while the device runs this one.
use super::device::{Driver, Status};
use super::{plan::Launch, with_params, Func};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// Queues shorter than this launch kernel by kernel: capture and update cost more than they save.
const GRAPH_MIN_LAUNCHES: usize = 8;
/// Instantiated graphs kept (decode, prefill, the sampling tail...); the oldest goes first.
const GRAPH_CACHE: usize = 8;
/// Read-backs of at most this many bytes go through page-locked slots; larger ones are read at once.
pub const READ_SLOT_BYTES: usize = 1 << 20;

/// A page-locked staging buffer and the event recorded after the copy into it.
struct Slot {
    host: usize,
    event: usize,
    bytes: usize,
    busy: bool,
}

/// Counts for `wgllm bench --device cuda` and the tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// graphs launched
    pub graphs: u64,
    /// of those, instantiated anew (the rest updated a cached instantiation)
    pub instantiated: u64,
    /// kernels launched one by one (short queues)
    pub direct: u64,
    /// kernels in the last submit
    pub last_submit: u64,
}

#[derive(Default)]
pub struct Queue {
    pending: Vec<(Func, Launch)>,
    /// while profiling: launches kernel by kernel with timing events between them
    pub profiler: Option<super::profile::Profiler>,
    /// (the kernel sequence's hash, the instantiated graph), most recent last
    execs: Vec<(u64, usize)>,
    slots: Vec<Slot>,
    pub stats: QueueStats,
}

/// What failed during a submit: the call, and the launch it was for when there is one.
pub struct SubmitError {
    pub failure: crate::backend::native::device::Failure,
    pub launch: Option<Launch>,
}

fn fail(failure: crate::backend::native::device::Failure, launch: Option<&Launch>) -> SubmitError {
    SubmitError {
        failure,
        launch: launch.cloned(),
    }
}

impl Queue {
    pub fn push(&mut self, f: Func, l: &Launch) {
        self.pending.push((f, l.clone()));
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Launches everything queued, in order: kernel by kernel, or as one graph.
    pub fn submit<D: Driver>(&mut self, d: &D) -> Result<(), SubmitError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let work = std::mem::take(&mut self.pending);
        self.stats.last_submit = work.len() as u64;
        if let Some(p) = &mut self.profiler {
            self.stats.direct += work.len() as u64;
            return p.submit(d, &work);
        }
        if work.len() < GRAPH_MIN_LAUNCHES {
            for (f, l) in &work {
                with_params(&l.args, |p| d.launch(*f, l.grid, p)).map_err(|e| fail(e, Some(l)))?;
            }
            self.stats.direct += work.len() as u64;
            return Ok(());
        }
        d.capture_begin().map_err(|e| fail(e, None))?;
        for (f, l) in &work {
            if let Err(e) = with_params(&l.args, |p| d.launch(*f, l.grid, p)) {
                // end the capture so the stream is usable again; the partial graph is dropped
                if let Ok(g) = d.capture_end() {
                    d.graph_destroy(g);
                }
                return Err(fail(e, Some(l)));
            }
        }
        let graph = d.capture_end().map_err(|e| fail(e, None))?;
        let r = self.launch_graph(d, graph, &work);
        d.graph_destroy(graph);
        r
    }

    fn launch_graph<D: Driver>(&mut self, d: &D, graph: usize, work: &[(Func, Launch)]) -> Result<(), SubmitError> {
        let mut h = DefaultHasher::new();
        for (f, _) in work {
            f.0.hash(&mut h);
        }
        let key = h.finish();
        let exec = match self.execs.iter().position(|(k, _)| *k == key) {
            Some(i) => {
                let (_, exec) = self.execs.remove(i);
                if d.graph_update(exec, graph) {
                    Some(exec)
                } else {
                    d.exec_destroy(exec);
                    None
                }
            }
            None => None,
        };
        let exec = match exec {
            Some(e) => e,
            None => {
                self.stats.instantiated += 1;
                log::debug!(
                    "native graph of {} kernels instantiated ({} so far, {} launched)",
                    work.len(),
                    self.stats.instantiated,
                    self.stats.graphs
                );
                d.graph_instantiate(graph).map_err(|e| fail(e, None))?
            }
        };
        self.execs.push((key, exec));
        if self.execs.len() > GRAPH_CACHE {
            let (_, old) = self.execs.remove(0);
            d.exec_destroy(old);
        }
        self.stats.graphs += 1;
        d.graph_launch(exec).map_err(|e| fail(e, None))
    }

    /// Queues a copy of `bytes` at device `ptr` into a free page-locked slot (made on first use);
    /// the slot's index is the ticket. Call after `submit`.
    pub fn read_start<D: Driver>(&mut self, d: &D, ptr: u64, bytes: usize) -> Status<usize> {
        let i = match self.slots.iter().position(|s| !s.busy) {
            Some(i) => i,
            None => {
                let host = d.host_alloc(READ_SLOT_BYTES)?;
                let event = d.event_create()?;
                self.slots.push(Slot {
                    host,
                    event,
                    bytes: 0,
                    busy: false,
                });
                self.slots.len() - 1
            }
        };
        d.download_async(ptr, self.slots[i].host, bytes, self.slots[i].event)?;
        let s = &mut self.slots[i];
        s.busy = true;
        s.bytes = bytes;
        Ok(i)
    }

    /// The slot's event and bytes; the slot is free again once the caller has copied them out.
    pub fn slot(&self, ticket: usize) -> Option<(usize, usize, usize)> {
        self.slots
            .get(ticket)
            .filter(|s| s.busy)
            .map(|s| (s.event, s.host, s.bytes))
    }

    pub fn release(&mut self, ticket: usize) {
        if let Some(s) = self.slots.get_mut(ticket) {
            s.busy = false;
        }
    }

    /// Frees the instantiated graphs and the page-locked slots.
    pub fn destroy<D: Driver>(&mut self, d: &D) {
        for (_, e) in self.execs.drain(..) {
            d.exec_destroy(e);
        }
        for s in self.slots.drain(..) {
            d.host_free(s.host);
            d.event_destroy(s.event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::native::device::{Failure, Rtc};
    use crate::backend::native::{Arg, ModuleKey};
    use std::ffi::{c_char, c_void, CStr};
    use std::sync::Mutex;

    /// A runtime that only logs its calls; `update_ok` says whether exec updates succeed.
    #[derive(Default)]
    struct Log {
        calls: Mutex<Vec<String>>,
        update_ok: bool,
    }
    impl Log {
        fn take(&self) -> Vec<String> {
            std::mem::take(&mut self.calls.lock().unwrap())
        }
        fn log(&self, s: String) {
            self.calls.lock().unwrap().push(s);
        }
    }
    struct NoRtc;
    impl Rtc for NoRtc {
        type Program = ();
        const IMAGE: &'static str = "none";
        const CUDA_PRELUDE: bool = false;
        fn options(_: &str) -> Vec<String> {
            vec![]
        }
        fn create(_: &CStr, _: &CStr) -> Status<()> {
            Ok(())
        }
        fn compile(_: (), _: &[*const c_char]) -> Status {
            Ok(())
        }
        fn log(_: ()) -> String {
            String::new()
        }
        fn code_size(_: ()) -> Status<usize> {
            Ok(0)
        }
        fn code(_: (), _: &mut [u8]) -> Status {
            Ok(())
        }
        fn destroy(_: ()) {}
    }
    impl Driver for Log {
        type Rtc = NoRtc;
        fn bind(&self) -> Status {
            Ok(())
        }
        fn alloc(&self, _: usize) -> Status<u64> {
            Ok(0)
        }
        fn free(&self, _: u64) {}
        fn upload(&self, _: u64, _: &[u8]) -> Status {
            Ok(())
        }
        fn download(&self, _: u64, _: &mut [u8]) -> Status {
            Ok(())
        }
        fn load(&self, _: &[u8]) -> Status<usize> {
            Ok(0)
        }
        fn function(&self, _: usize, _: &CStr) -> Status<Func> {
            Ok(Func(0))
        }
        fn launch(&self, f: Func, grid: (u32, u32), params: &mut [*mut c_void]) -> Status {
            let a0 = unsafe { *(params[0] as *const u32) };
            self.log(format!("launch f{} {}x{} a{a0}", f.0, grid.0, grid.1));
            if a0 == 666 {
                return Err(Failure {
                    call: "launch",
                    detail: "refused".into(),
                });
            }
            Ok(())
        }
        fn sync(&self) -> Status {
            Ok(())
        }
        fn capture_begin(&self) -> Status {
            self.log("begin".into());
            Ok(())
        }
        fn capture_end(&self) -> Status<usize> {
            self.log("end".into());
            Ok(7)
        }
        fn graph_instantiate(&self, _: usize) -> Status<usize> {
            self.log("instantiate".into());
            Ok(9)
        }
        fn graph_update(&self, _: usize, _: usize) -> bool {
            self.log("update".into());
            self.update_ok
        }
        fn graph_launch(&self, _: usize) -> Status {
            self.log("graph".into());
            Ok(())
        }
        fn graph_destroy(&self, _: usize) {}
        fn exec_destroy(&self, _: usize) {
            self.log("exec_destroy".into());
        }
        fn host_alloc(&self, _: usize) -> Status<usize> {
            self.log("host_alloc".into());
            Ok(0x1000)
        }
        fn host_free(&self, _: usize) {}
        fn event_create(&self) -> Status<usize> {
            Ok(1)
        }
        fn event_destroy(&self, _: usize) {}
        fn download_async(&self, _: u64, _: usize, bytes: usize, _: usize) -> Status {
            self.log(format!("read {bytes}"));
            Ok(())
        }
        fn event_wait(&self, _: usize) -> Status {
            Ok(())
        }
        fn timing_event_create(&self) -> Status<usize> {
            let mut c = self.calls.lock().unwrap();
            c.push("timing_event".into());
            Ok(100 + c.iter().filter(|s| *s == "timing_event").count())
        }
        fn event_record(&self, e: usize) -> Status {
            self.log(format!("record {e}"));
            Ok(())
        }
        // event n is reached at n ms: every kernel between two consecutive events takes 1 ms
        fn event_elapsed_ms(&self, a: usize, b: usize) -> Status<f32> {
            Ok(b as f32 - a as f32)
        }
    }

    fn launch(a0: u32) -> Launch {
        Launch {
            module: ModuleKey {
                file: "x.hip",
                defines: vec![],
            },
            entry: "x",
            grid: (a0 + 1, 1),
            args: vec![Arg::U32(a0)],
        }
    }

    fn queue(q: &mut Queue, funcs: &[u64], a0: u32) {
        for &f in funcs {
            q.push(Func(f), &launch(a0));
        }
    }

    #[test]
    fn short_queues_launch_directly_and_long_ones_replay_one_graph() {
        let d = Log {
            update_ok: true,
            ..Default::default()
        };
        let mut q = Queue::default();
        queue(&mut q, &[1, 2, 3], 4);
        q.submit(&d).map_err(|e| e.failure.detail).unwrap();
        assert_eq!(d.take(), ["launch f1 5x1 a4", "launch f2 5x1 a4", "launch f3 5x1 a4"]);
        // a step of 10 kernels: captured in order, instantiated once
        let step: Vec<u64> = (1..=10).collect();
        queue(&mut q, &step, 0);
        q.submit(&d).map_err(|e| e.failure.detail).unwrap();
        let log = d.take();
        assert_eq!(log.first().unwrap(), "begin");
        assert_eq!(
            log[1..11],
            (1..=10).map(|f| format!("launch f{f} 1x1 a0")).collect::<Vec<_>>()[..]
        );
        assert_eq!(log[11..], ["end", "instantiate", "graph"]);
        // the same kernels with other arguments: the instantiation is updated, not made again
        queue(&mut q, &step, 1);
        q.submit(&d).map_err(|e| e.failure.detail).unwrap();
        assert_eq!(d.take()[11..], ["end", "update", "graph"]);
        // other kernels: a second instantiation beside the first
        queue(&mut q, &[5; 10], 1);
        q.submit(&d).map_err(|e| e.failure.detail).unwrap();
        assert_eq!(d.take()[11..], ["end", "instantiate", "graph"]);
        assert_eq!(q.stats.graphs, 3);
        assert_eq!(q.stats.instantiated, 2);
        assert_eq!(q.stats.direct, 3);
        assert_eq!(q.stats.last_submit, 10);
        assert!(q.is_empty());
    }

    #[test]
    fn a_refused_update_instantiates_again_and_a_failed_launch_names_it() {
        let d = Log::default();
        let mut q = Queue::default();
        let step: Vec<u64> = (1..=9).collect();
        queue(&mut q, &step, 0);
        q.submit(&d).map_err(|e| e.failure.detail).unwrap();
        d.take();
        queue(&mut q, &step, 0);
        q.submit(&d).map_err(|e| e.failure.detail).unwrap();
        assert_eq!(
            d.take()[10..],
            ["end", "update", "exec_destroy", "instantiate", "graph"]
        );
        queue(&mut q, &step, 666);
        let e = q.submit(&d).err().expect("the launch fails");
        assert_eq!(e.launch.map(|l| l.args.len()), Some(1));
        assert_eq!(d.take().last().unwrap(), "end", "the capture is ended after a failure");
        assert!(q.is_empty());
    }

    #[test]
    fn profiling_launches_one_by_one_between_timing_events_and_charges_each_kernel() {
        let d = Log::default();
        let mut q = Queue {
            profiler: Some(Default::default()),
            ..Default::default()
        };
        queue(&mut q, &(1..=10).collect::<Vec<_>>(), 0);
        q.submit(&d).map_err(|e| e.failure.detail).unwrap();
        let log = d.take();
        assert!(!log.iter().any(|s| s == "begin"), "no graph while profiling: {log:?}");
        assert_eq!(log.iter().filter(|s| *s == "timing_event").count(), 11);
        let ev: Vec<_> = log.iter().filter(|s| !s.starts_with("timing")).collect();
        assert_eq!(ev[0], "record 101");
        for i in 0..10 {
            assert_eq!(*ev[1 + 2 * i], format!("launch f{} 1x1 a0", i + 1));
            assert_eq!(*ev[2 + 2 * i], format!("record {}", 102 + i));
        }
        // a second submit reuses the events
        queue(&mut q, &[3, 4], 0);
        q.submit(&d).map_err(|e| e.failure.detail).unwrap();
        assert!(!d.take().iter().any(|s| s == "timing_event"));
        let p = q.profiler.as_ref().unwrap();
        assert_eq!(p.totals.get("x"), Some(&(12e6, 12)));
    }

    #[test]
    fn read_slots_are_reused_once_released() {
        let d = Log::default();
        let mut q = Queue::default();
        let a = q.read_start(&d, 0x10, 4).map_err(|e| e.detail).unwrap();
        let b = q.read_start(&d, 0x20, 8).map_err(|e| e.detail).unwrap();
        assert_ne!(a, b);
        assert_eq!(q.slot(b).map(|s| s.2), Some(8));
        q.release(a);
        assert_eq!(q.slot(a), None);
        let c = q.read_start(&d, 0x30, 4).map_err(|e| e.detail).unwrap();
        assert_eq!(c, a);
        let log = d.take();
        assert_eq!(log.iter().filter(|s| *s == "host_alloc").count(), 2);
    }
}
