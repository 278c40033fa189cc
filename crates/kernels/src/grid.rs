//! Launch grids shared by the kernels.

use cubecl::prelude::*;

/// `cubes` cubes in a grid a device accepts: along x, and rows of 65,535
/// along y beyond that (kernels index them as `CUBE_POS`, x fastest).
pub(crate) fn cube_count(cubes: usize) -> CubeCount {
    const MAX_X: usize = 65535;
    if cubes <= MAX_X {
        CubeCount::Static(cubes as u32, 1, 1)
    } else {
        CubeCount::Static(MAX_X as u32, cubes.div_ceil(MAX_X) as u32, 1)
    }
}
