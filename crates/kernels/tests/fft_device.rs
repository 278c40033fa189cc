//! FFT kernels on a real CubeCL device (wgpu; lavapipe in CI) against the f64
//! CPU oracle of the same plan.

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::fft::{Direction, FftDesc, FftKind, FftPlan, Norm};

fn client() -> ComputeClient<WgpuRuntime> {
    WgpuRuntime::client(&WgpuDevice::default())
}

/// xorshift64*: fresh inputs each call, reproducible from the printed seed.
struct Rng(u64);
impl Rng {
    fn seeded() -> Self {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        Rng(t.as_nanos() as u64 | 1)
    }
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545F4914F6CDD1D);
        ((v >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next()).collect()
    }
}

const POISON: f32 = f32::NAN;

/// Runs `desc` on the device and on the f64 oracle; returns the relative L2 error.
fn check(client: &ComputeClient<WgpuRuntime>, desc: FftDesc, rng: &mut Rng) -> f64 {
    let plan = FftPlan::new(desc.clone()).unwrap_or_else(|e| panic!("{desc:?}: {e}"));
    let input = rng.vec(plan.input_floats());
    let input64: Vec<f64> = input.iter().map(|&v| v as f64).collect();
    let expected = plan.execute_cpu(&input64).unwrap();
    let device = plan.on_device(client).unwrap_or_else(|e| panic!("{desc:?}: {e}"));
    let in_h = client.create_from_slice(f32::as_bytes(&input));
    let out_h = client.create_from_slice(f32::as_bytes(&vec![POISON; plan.output_floats()]));
    device.execute(&in_h, &out_h).unwrap();
    let got = f32::from_bytes(&client.read_one(out_h).unwrap()).to_vec();
    assert_eq!(got.len(), expected.len());
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (g, e) in got.iter().zip(&expected) {
        assert!(g.is_finite(), "{desc:?}: unwritten or non-finite output");
        num += (*g as f64 - e).powi(2);
        den += e * e;
    }
    (num / den.max(1e-300)).sqrt()
}

#[test]
fn c2c_small_sizes() {
    let client = client();
    let mut rng = Rng::seeded();
    for log2 in 0..=6 {
        let n = 1 << log2;
        for dir in [Direction::Forward, Direction::Inverse] {
            let e = check(&client, FftDesc::new(&[3, n], &[-1], FftKind::C2C, dir), &mut rng);
            assert!(e < 1e-6, "n={n} {dir:?}: {e}");
        }
    }
}
