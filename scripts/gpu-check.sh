#!/usr/bin/env bash
# GPU check (issue 27, item 6): trains the model zoo's MNIST CNN for one epoch with `edl train
# --backend webgpu` and again with `--backend wasm`, and prints steps/s for both, the WebGPU
# adapter (vendor / architecture / description) and the test accuracy.
#
# It is made for a machine with no Node.js and no network: everything comes from the folder that
# scripts/gpu-check-pack.sh prepares (.gpu-check/, an ignored path): an official Node.js binary
# (xz), the project's built JavaScript with only the node_modules files a job opens, Dawn's
# dawn.node, the native addon, the MNIST RecordIO files of `edl demo`, and Debian's Vulkan loader.
# Nothing is written outside the work folder (default: a new /tmp/edl-gpu-check.XXXXXX) and --out:
# the Vulkan loader, when the machine has none, is unpacked there and found through LD_LIBRARY_PATH.
# The system's `node`, if any, is never run: every process is the shipped binary.
#
# Exit status: 0 both backends trained on a hardware adapter; 1 a software adapter only (without
# --allow-software), no adapter, or a failed job; 2 bad arguments or an incomplete pack.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: bash scripts/gpu-check.sh [options]

Trains ElasticDL-ts's MNIST CNN (model zoo 'mnist': two 5x5 conv layers, 8 and 16 filters, a
64-unit dense layer; Adam 0.002) for 1 epoch on the 8,000 training digits of `edl demo`, minibatch
64, 1 worker (125 steps), on --backend webgpu then --backend wasm, and evaluates each on the 2,000
held-out digits.

Options:
  --allow-software     accept a software WebGPU adapter (lavapipe/llvmpipe, SwiftShader): a dry
                       run on a machine without a GPU (default: exit 1 on one)
  --train-records N    train on the first N training digits only (1-8000; default 8000)
  --test-records N     evaluate on the first N held-out digits only (1-2000; default 2000)
  --backends LIST      backends to train on, in order (default "webgpu wasm")
  --bundled-vulkan     use the shipped Vulkan loader even where the machine has one
  --pack DIR           the folder made by scripts/gpu-check-pack.sh (default: .gpu-check)
  --work DIR           folder to unpack and train in (default: a new /tmp/edl-gpu-check.XXXXXX)
  --out DIR            copy the logs and summary.json there (default: $OUT when set)
  --run-timeout S      seconds one training job may take (default 100)
  --app DIR --node FILE --data DIR
                       run on an unpacked tree instead of the pack (gpu-check-pack.sh traces
                       such a run to find the files a job opens)
EOF
}

die() {
  echo "gpu-check: $1" >&2
  exit "${2:-1}"
}

repo=$(cd "$(dirname "$0")/.." && pwd)
allow_software=0 bundled_vulkan=0
train_records=8000 test_records=2000 backends="webgpu wasm" run_timeout=100
pack=$repo/.gpu-check work="" out=${OUT:-} app="" node_bin="" data=""
while [ $# -gt 0 ]; do
  case $1 in
    --allow-software) allow_software=1 ;;
    --bundled-vulkan) bundled_vulkan=1 ;;
    --train-records | --test-records | --backends | --pack | --work | --out | --run-timeout | --app | --node | --data)
      [ $# -ge 2 ] || die "$1 needs a value" 2
      case $1 in
        --train-records) train_records=$2 ;;
        --test-records) test_records=$2 ;;
        --backends) backends=$2 ;;
        --pack) pack=$2 ;;
        --work) work=$2 ;;
        --out) out=$2 ;;
        --run-timeout) run_timeout=$2 ;;
        --app) app=$2 ;;
        --node) node_bin=$2 ;;
        --data) data=$2 ;;
      esac
      shift
      ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" 2 ;;
  esac
  shift
done
in_range() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
in_range "$train_records" 1 8000 || die "--train-records must be an integer in [1, 8000], got '$train_records'" 2
in_range "$test_records" 1 2000 || die "--test-records must be an integer in [1, 2000], got '$test_records'" 2
in_range "$run_timeout" 1 86400 || die "--run-timeout must be a number of seconds, got '$run_timeout'" 2
for backend in $backends; do
  case $backend in webgpu | wasm | cpu | tensorflow) ;; *) die "unknown backend '$backend' in --backends" 2 ;; esac
done
if [ -n "$app$node_bin$data" ] && { [ -z "$app" ] || [ -z "$node_bin" ] || [ -z "$data" ]; }; then
  die "--app, --node and --data go together" 2
fi

started=$SECONDS
if [ -z "$work" ]; then work=$(mktemp -d /tmp/edl-gpu-check.XXXXXX); else mkdir -p "$work"; fi
work=$(cd "$work" && pwd)
logs=$work/logs
mkdir -p "$logs"
echo "gpu-check: work folder $work"

# --- Node.js, the project and the data: from the pack unless given ------------------------------
if [ -z "$app" ]; then
  [ -f "$pack/MANIFEST" ] || die "no $pack/MANIFEST: run 'bash scripts/gpu-check-pack.sh' on a machine with the built repository and a network first, and carry .gpu-check" 2
  (cd "$pack" && sha256sum --quiet -c SHA256SUMS) || die "a file of $pack does not match its SHA256SUMS: pack again" 2
  node_xz=$(sed -n 's/^node_xz=//p' "$pack/MANIFEST")
  mkdir -p "$work/bin"
  node_bin=$work/bin/node
  if command -v xz >/dev/null; then
    xz -dc "$pack/$node_xz" >"$node_bin"
  elif command -v python3 >/dev/null; then
    python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$pack/$node_xz" >"$node_bin"
  else
    die "neither xz nor python3 is installed: cannot unpack $pack/$node_xz" 2
  fi
  chmod +x "$node_bin"
  # tar runs `xz -d` itself; without xz, decompress in Python first.
  if command -v xz >/dev/null; then
    tar -xJf "$pack/edl-bundle.tar.xz" -C "$work"
  else
    python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$pack/edl-bundle.tar.xz" | tar -xf - -C "$work"
  fi
  app=$work/app
  data=$work/data
fi
node_bin=$(cd "$(dirname "$node_bin")" && pwd)/$(basename "$node_bin")
node_version=$("$node_bin" --version) || die "$node_bin does not run on this machine" 2
# Child processes (master, workers) are started with process.execPath; a PATH entry covers anything
# else that looks `node` up.
[ "$("$node_bin" -p process.execPath)" = "$node_bin" ] || die "$node_bin resolves to another executable" 2
export PATH="$(dirname "$node_bin"):$PATH"
[ "$(command -v node)" = "$node_bin" ] || die "PATH finds $(command -v node), not the shipped $node_bin" 2
edl=$app/packages/cli/dist/bin/edl.js
[ -f "$edl" ] || die "no $edl in the unpacked tree" 2

# --- Vulkan: the loader, and NVIDIA's driver manifest where the machine has one -----------------
ldconfig_bin=$(command -v ldconfig || echo /sbin/ldconfig)
vulkan_loader=system
if [ "$bundled_vulkan" = 1 ] || ! "$ldconfig_bin" -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '; then
  deb=$(ls "$pack"/libvulkan1_*.deb 2>/dev/null | head -1 || true)
  [ -n "$deb" ] || die "the machine has no libvulkan.so.1 and the pack holds no libvulkan1 .deb" 2
  mkdir -p "$work/vulkan"
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$deb" "$work/vulkan"
  else
    (cd "$work/vulkan" && ar x "$deb" && tar -xf data.tar.* && rm -f data.tar.* control.tar.* debian-binary)
  fi
  vulkan_dir=$(dirname "$(find "$work/vulkan" -name 'libvulkan.so.1' | head -1)")
  export LD_LIBRARY_PATH="$vulkan_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  vulkan_loader="$(basename "$deb") unpacked in $vulkan_dir"
fi
# NVIDIA's Vulkan driver (libGLX_nvidia.so.0) loads GLVND's libraries at run time: without them the
# loader finds the driver's manifest but "no drivers" (seen on a bare H100 machine).
if ! "$ldconfig_bin" -p 2>/dev/null | grep -q 'libGLdispatch\.so\.0 '; then
  mkdir -p "$work/glvnd"
  for deb in "$pack"/lib{glvnd0,glx0,gl1,egl1,gles2,opengl0}_*.deb; do
    [ -f "$deb" ] || continue
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$work/glvnd"
    else
      (cd "$work/glvnd" && ar x "$deb" && tar -xf data.tar.* && rm -f data.tar.* control.tar.* debian-binary)
    fi
  done
  glvnd_dir=$(find "$work/glvnd" -name 'libGLdispatch.so.0' -printf '%h\n' 2>/dev/null | head -1)
  if [ -n "$glvnd_dir" ]; then export LD_LIBRARY_PATH="$glvnd_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
fi
for dir in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
  if [ -d "$dir" ]; then export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$dir"; fi
done
nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -f "$nvidia_icd" ]; then
  # VK_DRIVER_FILES for loaders from 1.3.207 on, VK_ICD_FILENAMES for older ones.
  export VK_DRIVER_FILES=$nvidia_icd VK_ICD_FILENAMES=$nvidia_icd
fi

# --- The WebGPU adapter: the one `edl train --backend webgpu` gets (requestAdapter, no options) --
probe_adapter() {
  EDL_APP=$app "$node_bin" --input-type=module -e '
    import { createRequire } from "node:module";
    import { pathToFileURL } from "node:url";
    const resolve = createRequire(`${process.env.EDL_APP}/packages/worker/package.json`).resolve;
    const dawn = await import(pathToFileURL(resolve("webgpu")).href);
    const adapter = await dawn.create([]).requestAdapter();
    let result = { found: false };
    if (adapter !== null) {
      const { vendor, architecture, device, description, isFallbackAdapter } = adapter.info;
      const text = [vendor, architecture, device, description].join(" ");
      const software = isFallbackAdapter === true || /software|swiftshader|llvmpipe|lavapipe/i.test(text);
      result = { found: true, vendor, architecture, device, description, software };
    }
    console.log(`EDL_ADAPTER ${JSON.stringify(result)}`);
    process.exit(0);
  '
}
adapter_line=""
if [[ " $backends " == *" webgpu "* ]]; then
  probe_adapter >"$logs/adapter.log" 2>&1 || true
  adapter_line=$(sed -n 's/^EDL_ADAPTER //p' "$logs/adapter.log")
  if [ -z "$adapter_line" ] || [[ $adapter_line == '{"found":false}' ]]; then
    cat "$logs/adapter.log" >&2
    echo "gpu-check: Vulkan loader: $vulkan_loader; VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}; LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" >&2
    echo "gpu-check: the loader's own account (VK_LOADER_DEBUG=error,warn,driver), last 40 lines:" >&2
    VK_LOADER_DEBUG=error,warn,driver probe_adapter 2>&1 | tail -40 >&2 || true
    die "WebGPU found no adapter"
  fi
  if [[ $adapter_line == *'"software":true'* ]]; then
    if [ "$allow_software" = 1 ]; then
      echo "gpu-check: WebGPU adapter is SOFTWARE, accepted for a dry run (--allow-software): $adapter_line"
    else
      die "WebGPU found only a software adapter, so this is no GPU check: $adapter_line (--allow-software for a dry run)"
    fi
  fi
fi

# --- Data: all of it, or the first N records of each set (through `edl recordio cat | write`) ---
take_records() { # take_records SOURCE_DIR COUNT TARGET_DIR
  mkdir -p "$3"
  local remaining=$2 file count
  for file in "$1"/*.rio; do
    [ "$remaining" -gt 0 ] || break
    count=$("$node_bin" "$edl" recordio inspect "$file" --json | "$node_bin" -e \
      'let s="";process.stdin.on("data",(d)=>s+=d).on("end",()=>console.log(JSON.parse(s).numRecords))')
    [ "$count" -le "$remaining" ] || count=$remaining
    "$node_bin" "$edl" recordio cat "$file" --count "$count" --format base64 |
      "$node_bin" "$edl" recordio write "$3/$(basename "$file")" --format base64 >>"$logs/subset.log" 2>&1
    remaining=$((remaining - count))
  done
}
train_dir=$data/train test_dir=$data/test
if [ "$train_records" -lt 8000 ]; then
  train_dir=$work/subset/train
  take_records "$data/train" "$train_records" "$train_dir"
fi
if [ "$test_records" -lt 2000 ]; then
  test_dir=$work/subset/test
  take_records "$data/test" "$test_records" "$test_dir"
fi

# --- Training, one job per backend ---------------------------------------------------------------
minibatch=64
# One JSON line from a job's log: backend, adapter, steps, seconds, steps/s, test accuracy.
summarize_job() { # summarize_job BACKEND LOG METRICS EXIT_STATUS
  "$node_bin" -e '
    const fs = require("node:fs");
    const [backend, logFile, metricsFile, exitStatus] = process.argv.slice(1);
    const events = fs.readFileSync(logFile, "utf8").split("\n").filter((l) => l.startsWith("{"))
      .map((l) => { try { return JSON.parse(l); } catch { return {}; } });
    const at = (e) => Date.parse(e.time) / 1000;
    const selected = events.find((e) => e.msg === "backend.selected");
    const received = events.filter((e) => e.msg === "task.received" && e.kind === "training");
    const done = events.filter((e) => e.msg === "task.done" && e.kind === "training");
    const progress = events.filter((e) => e.msg === "progress" && e.mode === "training");
    const steps = events.find((e) => e.msg === "worker.done")?.steps;
    const seconds = received.length > 0 && done.length > 0 ? at(done.at(-1)) - at(received[0]) : undefined;
    // Steady rate: between the first and last progress reports, after the first steps compiled
    // the kernels (WebGPU shaders, wasm warm-up).
    const [first, last] = [progress[0], progress.at(-1)];
    const steady = first && last && last.steps > first.steps ? (last.steps - first.steps) / (at(last) - at(first)) : undefined;
    let accuracy;
    try {
      const lines = fs.readFileSync(metricsFile, "utf8").trim().split("\n");
      accuracy = JSON.parse(lines.at(-1)).metrics.accuracy;
    } catch {}
    const ok = exitStatus === "0" && selected?.backend === backend;
    console.log(JSON.stringify({ backend, ok, exitStatus: Number(exitStatus), selected: selected?.backend,
      detail: selected?.detail, steps, seconds, stepsPerSecond: steps && seconds ? steps / seconds : undefined,
      steadyStepsPerSecond: steady, accuracy }));
  ' "$@"
}
: >"$logs/jobs.jsonl"
for backend in $backends; do
  echo "gpu-check: training on $backend ($train_records digits, 1 epoch, minibatch $minibatch, 1 worker)"
  status=0
  timeout "$run_timeout" "$node_bin" "$edl" train --model-def mnist \
    --training-data "$train_dir" --validation-data "$test_dir" \
    --num-workers 1 --num-epochs 1 --minibatch-size "$minibatch" --num-minibatches-per-task 8 \
    --backend "$backend" --checkpoint-dir "$work/checkpoints-$backend" \
    --metrics-file "$logs/metrics-$backend.jsonl" --stats >"$logs/train-$backend.log" 2>&1 || status=$?
  summarize_job "$backend" "$logs/train-$backend.log" "$logs/metrics-$backend.jsonl" "$status" >>"$logs/jobs.jsonl"
  if [ "$status" != 0 ]; then
    echo "gpu-check: the $backend job exited $status; its log ends:" >&2
    tail -c 3000 "$logs/train-$backend.log" >&2
  fi
done

# --- Report --------------------------------------------------------------------------------------
gpu_name=""
for smi in nvidia-smi /usr/local/nvidia/bin/nvidia-smi; do
  if command -v "$smi" >/dev/null 2>&1; then
    gpu_name=$("$smi" --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
    break
  fi
done
EDL_REPORT_CONTEXT=$(printf '%s\n' "node=$node_version" "gpu=$gpu_name" "vulkan=$vulkan_loader" \
  "icd=${VK_DRIVER_FILES:-loader default}" "cpus=$(nproc)" "train=$train_records" "test=$test_records" \
  "minibatch=$minibatch" "seconds=$((SECONDS - started))" "allow_software=$allow_software") \
  "$node_bin" -e '
  const fs = require("node:fs");
  const [jobsFile, adapterLine, summaryFile] = process.argv.slice(1);
  const context = Object.fromEntries(process.env.EDL_REPORT_CONTEXT.split("\n").filter(Boolean)
    .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
  const jobs = fs.readFileSync(jobsFile, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const adapter = adapterLine ? JSON.parse(adapterLine) : undefined;
  const fixed = (x, d) => (typeof x === "number" ? x.toFixed(d) : "n/a");
  const out = [];
  out.push("", "== ElasticDL-ts GPU check ==");
  out.push(`trained: model zoo mnist CNN, 1 epoch of ${context.train} MNIST digits, minibatch ${context.minibatch}, 1 worker; tested on ${context.test} held-out digits`);
  out.push(`node ${context.node}, ${context.cpus} CPUs${context.gpu ? `, GPU ${context.gpu}` : ""}`);
  out.push(`vulkan loader: ${context.vulkan}; driver manifest: ${context.icd}`);
  if (adapter) {
    const kind = adapter.software ? "SOFTWARE" : "hardware";
    out.push(`WebGPU adapter: vendor=${adapter.vendor} architecture=${adapter.architecture} device=${adapter.device} description="${adapter.description}" (${kind})`);
  }
  out.push("", "backend  status  steps  seconds  steps/s  steady steps/s  test accuracy");
  for (const j of jobs) {
    out.push([j.backend.padEnd(7), (j.ok ? "ok" : `FAILED(${j.exitStatus})`).padEnd(6), String(j.steps ?? "n/a").padStart(5),
      fixed(j.seconds, 1).padStart(8), fixed(j.stepsPerSecond, 2).padStart(8), fixed(j.steadyStepsPerSecond, 2).padStart(15),
      (typeof j.accuracy === "number" ? `${(j.accuracy * 100).toFixed(2)}%` : "n/a").padStart(14)].join("  "));
  }
  const gpu = jobs.find((j) => j.backend === "webgpu"), wasm = jobs.find((j) => j.backend === "wasm");
  if (gpu?.stepsPerSecond && wasm?.stepsPerSecond) out.push(`webgpu / wasm: ${(gpu.stepsPerSecond / wasm.stepsPerSecond).toFixed(2)}x steps/s`);
  out.push("(seconds: first training task received to last training task done, so it includes compiling the kernels; steady: between the first and last progress reports)");
  out.push(`total ${context.seconds} s`);
  console.log(out.join("\n"));
  fs.writeFileSync(summaryFile, `${JSON.stringify({ ...context, adapter, jobs }, null, 2)}\n`);
' "$logs/jobs.jsonl" "$adapter_line" "$logs/summary.json"

if [ -n "$out" ]; then
  mkdir -p "$out/gpu-check"
  cp "$logs"/* "$out/gpu-check/"
fi

if grep -q '"ok":false' "$logs/jobs.jsonl"; then die "FAILED: a job failed (logs in $logs)"; fi
[[ $adapter_line != *'"software":true'* ]] || echo "gpu-check: WebGPU ran on a SOFTWARE adapter: a dry run, not a GPU figure"
echo "gpu-check: passed (logs in $logs)"
