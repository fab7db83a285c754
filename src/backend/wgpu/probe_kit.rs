//! The raw-wgpu set-up the GPU probes share (grid_sync_probe.rs, phase_chain_probe.rs): they time
//! one compute pass by timestamps outside the backend's kernel cache, so they build their own
//! layouts, pipelines and buffers. Binding 0 is always a 16-byte uniform window at a dynamic offset
//! (a phase's words), the rest whole storage buffers.
use super::WgpuBackend;

/// A layout of binding 0 (the uniform window) then storage buffers, read-only where `read_only`.
pub(super) fn layout(d: &wgpu::Device, read_only: &[bool]) -> (wgpu::BindGroupLayout, wgpu::PipelineLayout) {
    let entry = |i: u32, ty: wgpu::BufferBindingType, dynamic: bool| wgpu::BindGroupLayoutEntry {
        binding: i,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty,
            has_dynamic_offset: dynamic,
            min_binding_size: None,
        },
        count: None,
    };
    let mut entries = vec![entry(0, wgpu::BufferBindingType::Uniform, true)];
    for (i, &r) in read_only.iter().enumerate() {
        entries.push(entry(
            i as u32 + 1,
            wgpu::BufferBindingType::Storage { read_only: r },
            false,
        ));
    }
    let layout = d.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: None,
        entries: &entries,
    });
    let pl = d.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: None,
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    (layout, pl)
}

pub(super) fn pipeline(
    d: &wgpu::Device,
    pl: &wgpu::PipelineLayout,
    module: &wgpu::ShaderModule,
    entry: &str,
) -> wgpu::ComputePipeline {
    d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: Some(pl),
        module,
        entry_point: Some(entry),
        compilation_options: Default::default(),
        cache: None,
    })
}

pub(super) fn buf(d: &wgpu::Device, size: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
    d.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size,
        usage,
        mapped_at_creation: false,
    })
}

/// Binding 0 the first 16 bytes of `params` (moved by the dynamic offset), then `rest` whole.
pub(super) fn bind(
    d: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    params: &wgpu::Buffer,
    rest: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: params,
            offset: 0,
            size: std::num::NonZeroU64::new(16),
        }),
    }];
    for (i, b) in rest.iter().enumerate() {
        entries.push(wgpu::BindGroupEntry {
            binding: i as u32 + 1,
            resource: b.as_entire_binding(),
        });
    }
    d.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout,
        entries: &entries,
    })
}

/// Two timestamps around one compute pass, resolved into the first 16 bytes of a read-back.
pub(super) struct Stamps {
    queries: wgpu::QuerySet,
    stamps: wgpu::Buffer,
}

impl Stamps {
    pub(super) fn new(d: &wgpu::Device) -> Stamps {
        Stamps {
            queries: d.create_query_set(&wgpu::QuerySetDescriptor {
                label: None,
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            }),
            stamps: buf(d, 16, wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
        }
    }

    pub(super) fn pass<'e>(&self, enc: &'e mut wgpu::CommandEncoder) -> wgpu::ComputePass<'e> {
        enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: None,
            timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                query_set: &self.queries,
                beginning_of_pass_write_index: Some(0),
                end_of_pass_write_index: Some(1),
            }),
        })
    }

    /// After the pass: the two stamps into `read` at 0..16.
    pub(super) fn resolve(&self, enc: &mut wgpu::CommandEncoder, read: &wgpu::Buffer) {
        enc.resolve_query_set(&self.queries, 0..2, &self.stamps, 0);
        enc.copy_buffer_to_buffer(&self.stamps, 0, read, 0, 16);
    }
}

/// Submits `enc`, waits, and gives the pass's GPU seconds (its stamps at 0..16) and the rest of
/// `read` (a MAP_READ buffer, left unmapped for the next run).
pub(super) fn finish(b: &WgpuBackend, enc: wgpu::CommandEncoder, read: &wgpu::Buffer) -> (f64, Vec<u8>) {
    b.queue.submit([enc.finish()]);
    let slice = read.slice(..);
    slice.map_async(wgpu::MapMode::Read, |r| r.unwrap());
    b.device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let (t0, t1, rest) = {
        let v = slice.get_mapped_range().expect("probe read-back");
        let s: &[u64] = bytemuck::cast_slice(&v[..16]);
        (s[0], s[1], v[16..].to_vec())
    };
    read.unmap();
    let ns = t1.saturating_sub(t0) as f64 * b.queue.get_timestamp_period() as f64;
    (ns * 1e-9, rest)
}
