//! Kernel time per entry point on a native device (`wgllm bench --profile --device cuda`): while
//! it is on, the queue launches kernel by kernel (no graph) with a timing event recorded before
//! the first launch and after each one; at each submit the host waits for the last event and
//! charges the time between consecutive events to the kernel between them. Off by default: the
//! events and the lost graph cost time, so benchmarks measure wall time without it and use this
//! only to say where the time goes.
use super::device::{Driver, Status};
use super::queue::SubmitError;
use super::{plan::Launch, with_params, Func};
use std::collections::BTreeMap;

#[derive(Default)]
pub struct Profiler {
    /// timing events, made as a submit needs more and reused
    events: Vec<usize>,
    /// entry -> (total ns, launches)
    pub totals: BTreeMap<&'static str, (f64, u64)>,
}

fn fail(failure: super::device::Failure, launch: Option<&Launch>) -> SubmitError {
    SubmitError {
        failure,
        launch: launch.cloned(),
    }
}

impl Profiler {
    /// Launches `work` in order with events between the kernels, waits for the last one and adds
    /// each kernel's time to its entry.
    pub fn submit<D: Driver>(&mut self, d: &D, work: &[(Func, Launch)]) -> Result<(), SubmitError> {
        while self.events.len() <= work.len() {
            self.events.push(d.timing_event_create().map_err(|e| fail(e, None))?);
        }
        let ev = &self.events;
        d.event_record(ev[0]).map_err(|e| fail(e, None))?;
        for (i, (f, l)) in work.iter().enumerate() {
            with_params(&l.args, |p| d.launch(*f, l.grid, p)).map_err(|e| fail(e, Some(l)))?;
            d.event_record(ev[i + 1]).map_err(|e| fail(e, Some(l)))?;
        }
        d.event_wait(ev[work.len()]).map_err(|e| fail(e, None))?;
        for (i, (_, l)) in work.iter().enumerate() {
            let ms: Status<f32> = d.event_elapsed_ms(ev[i], ev[i + 1]);
            let ms = ms.map_err(|e| fail(e, Some(l)))?;
            let t = self.totals.entry(l.entry).or_default();
            t.0 += ms as f64 * 1e6;
            t.1 += 1;
        }
        Ok(())
    }

    pub fn destroy<D: Driver>(&mut self, d: &D) {
        for e in self.events.drain(..) {
            d.event_destroy(e);
        }
    }
}
