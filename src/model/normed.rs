//! A projection's input that may still be a residual add + RMSNorm not yet recorded: a device with
//! `AddRmsNormLinear` reads the norm inside the projection (one dispatch instead of two, and the
//! projection does not wait on a one-workgroup norm kernel), others record `AddRmsNorm` first. And
//! the add + norm after a projection: `LinearAddRmsNorm` where the device has it (`after_linear`).
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
    op: Op,
    ins: [&'a Tensor; 3],
    sum: &'a Tensor,
    fusions: &'a Fusions,
}

impl<'a> Normed<'a> {
    /// y = x Wᵀ, then `add_norm` (an `Op::AddRmsNorm`) of a and y with norm weight nw into sum
    /// and h: one `LinearAddRmsNorm` where the device has it for these operands (h then holds the
    /// rows), else the linear, with the add + norm left pending (`add_norm`).
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
                ins: [a, b, nw],
                sum,
                fusions,
            }),
            ready: Cell::new(false),
        }
    }

    /// The rows in `h`, recording the add + norm if it is not yet there (after a fused projection
    /// it is recorded again: the same sum, and h).
    pub fn rows(&self, dev: &dyn Backend) -> Result<&'a Tensor> {
        if let (Some(p), false) = (&self.pending, self.ready.get()) {
            dev.run(&p.op, &p.ins, &[p.sum, self.h])?;
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

    /// Records `AddRmsNormLinear` (with the swiglu epilogue or not) where the norm is pending and
    /// the device has it for these operands; false, with nothing recorded, otherwise.
    fn fused(&self, dev: &dyn Backend, w: &Tensor, y: &Tensor, swiglu: bool) -> Result<bool> {
        if let (Some(p), false) = (&self.pending, self.ready.get()) {
            if let Op::AddRmsNorm { eps, unit_offset } = p.op {
                let fused = Op::AddRmsNormLinear {
                    eps,
                    unit_offset,
                    swiglu,
                };
                let [a, b, nw] = p.ins;
                let (ins, outs) = ([a, b, nw, w], [p.sum, y]);
                if p.fusions.fuses(dev, &fused, &ins, &outs, [w, nw]) {
                    dev.run(&fused, &ins, &outs)?;
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The rows' tensor (its shape and dtype; not necessarily written yet).
    pub fn tensor(&self) -> &'a Tensor {
        self.h
    }
}
