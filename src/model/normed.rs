//! A projection's input that may still be a (residual add +) RMSNorm not yet recorded: a device
//! with `AddRmsNormLinear` (`RmsNormLinear`) reads the norm inside the projection (one dispatch
//! instead of two, and the projection does not wait on a one-workgroup norm kernel), others record
//! `AddRmsNorm` (`RmsNorm`) first. And the add + norm after a projection (`after_linear`):
//! `LinearAddRmsNorm` where the device has it, else the residual added in the projection's
//! epilogue (`LinearAdd`) where the device has that, the norm left pending on the sum alone (so
//! the next projection reads one row where it would read two), else the linear with the add +
//! norm pending.
use crate::backend::Backend;
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use std::cell::{Cell, RefCell};

/// A forward's answers to "does the device fuse this add + norm with this projection", by what
/// the answer depends on (the weight's dtype and shape, the norm weight's dtype, the rows): asked
/// once a forward per kind of projection, not once a layer (recording a step is host time the
/// device may wait on).
#[derive(Default)]
pub struct Fusions(RefCell<Vec<((DType, Vec<usize>, DType, usize, &'static str), bool)>>);

impl Fusions {
    /// Whether the device has `fused` for these operands, by (weight, norm weight, rows, op).
    pub fn fuses(
        &self,
        dev: &dyn Backend,
        fused: &Op,
        ins: &[&Tensor],
        outs: &[&Tensor],
        [w, nw]: [&Tensor; 2],
    ) -> bool {
        let key = (w.dtype, w.shape.clone(), nw.dtype, ins[0].shape[0], fused.name());
        if let Some((_, yes)) = self.0.borrow().iter().find(|(k, _)| *k == key) {
            return *yes;
        }
        let yes = dev.supports(&OpDesc::of(fused, ins, outs)).is_yes();
        self.0.borrow_mut().push((key, yes));
        yes
    }
}

/// Rows `h` for projections: already on the device, or `sum = a + b, h = rms_norm(sum, nw)` to
/// be recorded (`pending`). `h` is only written where a reader needs the rows themselves
/// (`rows`); the fused op leaves it unwritten and stores `sum`.
pub struct Normed<'a> {
    h: &'a Tensor,
    pending: Option<Pending<'a>>,
    /// whether `h` holds the rows (recorded, or never pending)
    ready: Cell<bool>,
}

struct Pending<'a> {
    /// `Op::AddRmsNorm` of ins = [a, b, nw] into sum and h, or `Op::RmsNorm` of ins = [x, nw]
    /// into h (sum None)
    op: Op,
    ins: Vec<&'a Tensor>,
    sum: Option<&'a Tensor>,
    fusions: &'a Fusions,
}

impl<'a> Normed<'a> {
    /// y = x Wᵀ, then `add_norm` (an `Op::AddRmsNorm`) of a and y with norm weight nw into sum
    /// and h: one `LinearAddRmsNorm` where the device has it for these operands (h then holds the
    /// rows); else `LinearAdd` into sum where the device has it (y unwritten), the norm of sum
    /// left pending; else the linear, with the add + norm left pending (`add_norm`).
    #[allow(clippy::too_many_arguments)]
    pub fn after_linear(
        dev: &dyn Backend,
        add_norm: &Op,
        [x, w]: [&Tensor; 2],
        [a, nw]: [&'a Tensor; 2],
        [y, sum, h]: [&'a Tensor; 3],
        fusions: &'a Fusions,
    ) -> Result<Self> {
        if let Op::AddRmsNorm { eps, unit_offset } = *add_norm {
            let fused = Op::LinearAddRmsNorm { eps, unit_offset };
            let (ins, outs) = ([x, w, a, nw], [y, sum, h]);
            if fusions.fuses(dev, &fused, &ins, &outs, [w, nw]) {
                dev.run(&fused, &ins, &outs)?;
                return Ok(Normed::ready(h));
            }
            let (ins, outs) = ([x, w, a], [sum]);
            if fusions.fuses(dev, &Op::LinearAdd, &ins, &outs, [w, nw]) {
                dev.run(&Op::LinearAdd, &ins, &outs)?;
                let norm = Op::RmsNorm { eps, unit_offset };
                return Ok(Normed {
                    h,
                    pending: Some(Pending {
                        op: norm,
                        ins: vec![sum, nw],
                        sum: None,
                        fusions,
                    }),
                    ready: Cell::new(false),
                });
            }
        }
        dev.run(&Op::Linear, &[x, w], &[y])?;
        Ok(Normed::add_norm(add_norm, [a, y, nw], [sum, h], fusions))
    }

    /// Rows already in `h`.
    pub fn ready(h: &'a Tensor) -> Self {
        Normed {
            h,
            pending: None,
            ready: Cell::new(true),
        }
    }

    /// `add_norm` (an `Op::AddRmsNorm`) of a and b with norm weight nw, into sum and h, not yet
    /// recorded; `fusions` keeps the forward's answers.
    pub fn add_norm(
        add_norm: &Op,
        [a, b, nw]: [&'a Tensor; 3],
        [sum, h]: [&'a Tensor; 2],
        fusions: &'a Fusions,
    ) -> Self {
        Normed {
            h,
            pending: Some(Pending {
                op: add_norm.clone(),
                ins: vec![a, b, nw],
                sum: Some(sum),
                fusions,
            }),
            ready: Cell::new(false),
        }
    }

    /// The rows in `h`, recording the add + norm if it is not yet there (after a fused projection
    /// it is recorded again: the same sum, and h).
    pub fn rows(&self, dev: &dyn Backend) -> Result<&'a Tensor> {
        if let (Some(p), false) = (&self.pending, self.ready.get()) {
            match p.sum {
                Some(sum) => dev.run(&p.op, &p.ins, &[sum, self.h])?,
                None => dev.run(&p.op, &p.ins, &[self.h])?,
            }
            self.ready.set(true);
        }
        Ok(self.h)
    }

    /// y = h Wᵀ: `AddRmsNormLinear` where the norm is pending and the device has it for these
    /// operands, else the rows, then `Linear`.
    pub fn linear(&self, dev: &dyn Backend, w: &Tensor, y: &Tensor) -> Result<()> {
        if self.fused(dev, w, y, false)? {
            return Ok(());
        }
        dev.run(&Op::Linear, &[self.rows(dev)?, w], &[y])
    }

    /// y = the swiglu of h Wᵀ's (gate, up) pairs in one dispatch: `AddRmsNormLinear` with its
    /// swiglu epilogue, where the norm is pending and the device has it for these operands (the
    /// MLP's down projection then reads y as it is, not through the swiglu). False, with nothing
    /// recorded, otherwise.
    pub fn linear_swiglu(&self, dev: &dyn Backend, w: &Tensor, y: &Tensor) -> Result<bool> {
        self.fused(dev, w, y, true)
    }

    /// Records `AddRmsNormLinear` or `RmsNormLinear` (with the swiglu epilogue or not) where the
    /// norm is pending and the device has it for these operands; false, with nothing recorded,
    /// otherwise.
    fn fused(&self, dev: &dyn Backend, w: &Tensor, y: &Tensor, swiglu: bool) -> Result<bool> {
        let Some(p) = self.pending.as_ref().filter(|_| !self.ready.get()) else {
            return Ok(false);
        };
        let (fused, ins, outs) = match (p.op.clone(), p.ins.as_slice(), p.sum) {
            (Op::AddRmsNorm { eps, unit_offset }, &[a, b, nw], Some(sum)) => {
                let op = Op::AddRmsNormLinear {
                    eps,
                    unit_offset,
                    swiglu,
                };
                (op, vec![a, b, nw, w], vec![sum, y])
            }
            (Op::RmsNorm { eps, unit_offset }, &[x, nw], None) => {
                let op = Op::RmsNormLinear {
                    eps,
                    unit_offset,
                    swiglu,
                };
                (op, vec![x, nw, w], vec![y])
            }
            _ => return Ok(false),
        };
        let nw = ins[ins.len() - 2];
        if p.fusions.fuses(dev, &fused, &ins, &outs, [w, nw]) {
            dev.run(&fused, &ins, &outs)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// The rows' tensor (its shape and dtype; not necessarily written yet).
    pub fn tensor(&self) -> &'a Tensor {
        self.h
    }
}
