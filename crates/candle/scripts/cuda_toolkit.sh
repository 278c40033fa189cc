#!/usr/bin/env bash
# A CUDA 13.0 toolkit from NVIDIA's pip wheels, enough to build fno-candle's
# `cuda` feature on a machine without one (docs/candle.md#building-the-cuda-feature):
# nvcc for candle-kernels, the cuBLAS, cuRAND, NVRTC and runtime libraries to
# link against, and link-time stubs of the driver (libcuda) and NCCL, which
# the GPU machine provides at run time.
#
#   bash crates/candle/scripts/cuda_toolkit.sh DIR     # then: . DIR/env.sh
set -euo pipefail
dir=$(realpath -m "${1:?usage: cuda_toolkit.sh DIR}")
mkdir -p "$dir/wheels" "$dir/root"
python3 -m pip download --no-deps -q -d "$dir/wheels" \
  "nvidia-cuda-nvcc==13.0.*" "nvidia-cuda-runtime==13.0.*" "nvidia-cuda-nvrtc==13.0.*" \
  "nvidia-nvvm==13.0.*" "nvidia-cuda-crt==13.0.*" "nvidia-cuda-cccl==13.0.*" \
  "nvidia-cublas>=13,<14" "nvidia-curand>=10.4,<11"
for wheel in "$dir"/wheels/*.whl; do python3 -m zipfile -e "$wheel" "$dir/root"; done
cuda="$dir/root/nvidia/cu13"
chmod +x "$cuda"/bin/* "$cuda"/nvvm/bin/* 2>/dev/null || true
cd "$cuda/lib"
for lib in cublas cublasLt cudart nvrtc; do ln -sf "lib$lib.so.13" "lib$lib.so"; done
ln -sf libcurand.so.10 libcurand.so
mkdir -p stubs
# Every driver entry point cuda.h names, plain and under the versioned names
# its macros map them to (some through __CUDA_API_PTSZ(...)).
grep -oE '\bcu[A-Z][A-Za-z0-9_]*' "$cuda/include/cuda.h" | sort -u | awk '{print "void " $1 "(void) {}"}' > stubs/cuda.c
cc -shared -fPIC -o stubs/libcuda.so -Wl,-soname,libcuda.so.1 stubs/cuda.c
echo 'void ncclGetVersion(void) {}' > stubs/nccl.c
cc -shared -fPIC -o stubs/libnccl.so -Wl,-soname,libnccl.so.2 stubs/nccl.c
cat > "$dir/env.sh" <<ENV
export PATH=$cuda/bin:\$PATH NVCC=$cuda/bin/nvcc
export CUDA_HOME=$cuda CUDA_PATH=$cuda CUDA_ROOT=$cuda CUDA_COMPUTE_CAP=\${CUDA_COMPUTE_CAP:-90}
export LIBRARY_PATH=$cuda/lib:$cuda/lib/stubs
ENV
echo "wrote $dir/env.sh"
