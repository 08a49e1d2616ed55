#!/usr/bin/env bash
# The GPU column from an offline GPU host in one call (issue 26; docs/gpu.md). Three steps:
#   here, with the package registries:  bash benchmarks/gpu_session.sh bundle
#       writes gpu-bundle/ (git-ignored): the wheels the host lacks and the selection's quick data
#   on the host, one device call:       bash benchmarks/gpu_session.sh run [run_all.py options]
#       (carry gpu-bundle; no network there) runs the selection on the host's own Python and
#       leaves gpu-results-{default,bf16}.tar.gz and the run's log in $OUT (or here): every framework's default
#       variant first, then the bf16 variants in a second pass, both inside one deadline
#   here again:                         python3 run_all.py --import-records <each archive>
# The selection: the frameworks the lent H200's image holds (PyTorch, JAX + Flax; Keras 3 on both
# from a carried wheel; its ONNX Runtime is a CPU build and TensorFlow is absent), every task, the
# quick profile, the default and bf16 variants, one GPU for MultiGPU, images held in RAM. A deadline stops the run in time to pack
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
    shift
    rm -rf /tmp/gpu-results-*
    export PYTHONUNBUFFERED=1
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
    # Every framework's default variant first, then its bf16 rows as far as the deadline reaches:
    # one pass of both would run them framework by framework and leave the last frameworks out.
    start=$SECONDS
    for variants in default bf16; do
      left=$((DEADLINE_SECONDS - (SECONDS - start)))
      if [ "$left" -lt 30 ]; then echo "[gpu] no time left for the $variants variants"; break; fi
      set +e
      timeout -s INT "$left" python3 run_all.py --from-bundle gpu-bundle --results-dir "/tmp/gpu-results-$variants" \
        --devices 1 --pipelines ram --timeout 240 --variants "$variants" "$@" 2>&1 | tee -a "${OUT:-.}/gpu-run.log"
      echo "[gpu] the $variants pass ended with status ${PIPESTATUS[0]}"
      set -e
      cp "/tmp/gpu-results-$variants.tar.gz" "${OUT:-.}/" || true
    done ;;
  *)
    echo "usage: bash benchmarks/gpu_session.sh bundle|run" >&2; exit 2 ;;
esac
