#!/usr/bin/env bash
# The GPU column from an offline GPU host in one call (issue 26; docs/gpu.md). Three steps:
#   here, with the package registries:  bash benchmarks/gpu_session.sh bundle
#       writes gpu-bundle/ (git-ignored): the wheels the host lacks and the selection's quick data
#   on the host, one device call:       bash benchmarks/gpu_session.sh run
#       (carry gpu-bundle; no network there) runs the selection on the host's own Python and
#       leaves gpu-results.tar.gz in $OUT (or here)
#   here again:                         python3 run_all.py --import-records <that archive>
# The selection: the frameworks the lent H200's image holds (PyTorch, JAX + Flax; Keras 3 on both
# from a carried wheel; its ONNX Runtime is a CPU build and TensorFlow is absent), every task, the
# quick profile, one GPU for MultiGPU, images held in RAM. A deadline stops the run in time to pack
# what it recorded, inside 8 minutes with start-up, so that a second try fits in 15.
set -euo pipefail
cd "$(dirname "$0")/.."
FRAMEWORKS=pytorch,jax_flax,keras_torch,keras_jax
TASKS=GPT,CNN,RNN,FCN5,Inference,MultiGPU
DEADLINE_SECONDS=${DEADLINE_SECONDS:-420}
case "${1:-}" in
  bundle)
    rm -rf gpu-bundle
    python3 run_all.py --bundle gpu-bundle --frameworks "$FRAMEWORKS" --tasks "$TASKS" --profile quick ;;
  run)
    rm -rf /tmp/gpu-results /tmp/gpu-results.tar.gz
    timeout -s INT "$DEADLINE_SECONDS" python3 run_all.py --from-bundle gpu-bundle --results-dir /tmp/gpu-results \
      --devices 1 --pipelines ram --timeout 240 || echo "[gpu] the run ended with status $?"
    cp /tmp/gpu-results.tar.gz "${OUT:-.}/" ;;
  *)
    echo "usage: bash benchmarks/gpu_session.sh bundle|run" >&2; exit 2 ;;
esac
