//! On an H100 only (`cargo test -p fno-recorder --test h100 -- --ignored`): the
//! recorder's ported properties against cubecl-cuda's, read from the driver.

use cubecl::cuda::{CudaDevice, CudaRuntime};
use cubecl::Runtime;
use fno_recorder::{RecordingDevice, RecordingRuntime};

#[test]
#[ignore = "needs an H100 and its driver"]
fn properties_equal_cubecl_cudas_on_an_h100() {
    let cuda = CudaRuntime::client(&CudaDevice { index: 0 });
    let recorder = RecordingRuntime::client(&RecordingDevice { index: 0 });
    let (cuda, recorder) = (cuda.properties(), recorder.properties());
    assert_eq!(recorder.hardware, cuda.hardware);
    assert_eq!(recorder.memory, cuda.memory);
    assert_eq!(recorder.features, cuda.features);
    assert_eq!(recorder, cuda);
}
