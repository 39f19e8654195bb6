# Shared by scripts/test-native.sh (bounded fuzzing in CI) and scripts/fuzz-long.sh (hours).
# Source it; it defines the fuzz targets, their options, and how seed corpora are made.

# One target per decoder: RecordIO chunks, the RecordIO index scan, snappy framing, gzip, and the
# TFRecord framing (frames and the header scan).
EDL_FUZZ_TARGETS=(chunk index snappy gzip tfrecord)

# Small inputs keep the fuzzers at thousands of executions per second: every seed fits, and
# 4 KiB holds several chunks, a snappy frame of real compressed data and a gzip member.
EDL_FUZZ_MAX_LEN=${EDL_FUZZ_MAX_LEN:-4096}

# The dictionary of a target.
fuzz_dict() {
  case "$1" in
    chunk | index) echo recordio.dict ;;
    *) echo "$1.dict" ;;
  esac
}

# fuzz_seed BUILD_DIR GOLDEN_DIR SEED_ROOT: writes SEED_ROOT/<target>/ for every target, from
# make_seeds (small files by the real writer) and from the golden files (each cut to what fits).
fuzz_seed() {
  local build=$1 golden=$2 seeds=$3
  rm -rf "$seeds"
  local t
  for t in "${EDL_FUZZ_TARGETS[@]}"; do mkdir -p "$seeds/$t"; done
  "$build/native/fuzz/make_seeds" "$seeds"
  python3 - "$golden" "$seeds" "$EDL_FUZZ_MAX_LEN" "$EDL_FUZZ_ROOT" <<'PY'
import os, struct, sys
golden, seeds, max_len, root = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def save(target, name, data):
    if len(data) <= max_len:
        open(os.path.join(seeds, target, name), 'wb').write(data)
if not os.path.isdir(golden):
    sys.exit(f'fuzz seeds: no golden directory {golden} (EDL_GOLDEN_DIR)')
if True:
    for name in sorted(os.listdir(golden)):
        if not name.endswith('.rio'):
            continue
        data = open(os.path.join(golden, name), 'rb').read()
        offsets, off = [], 0
        while off + 20 <= len(data):
            offsets.append(off)
            off += 20 + struct.unpack_from('<I', data, off + 12)[0]
        # The index target: the file whole when it fits, else its first chunks that fit, and for a
        # cut file its last (cut) chunk's header and what is left of it.
        keep = data if len(data) + 1 <= max_len else data[:max([o for o in offsets if o + 1 <= max_len] or [0])]
        for mode in (0, 1):
            save('index', f'g{mode}-{name}', bytes([mode]) + keep)
        if name.startswith('truncated-') and offsets:
            save('index', f'gcut-{name}', b'\x01' + data[offsets[-1]:][:max_len - 1])
        for i, o in enumerate(offsets[:4]):
            comp, size = struct.unpack_from('<II', data, o + 8)
            chunk = data[o:o + 20 + size]
            save('chunk', f'g{i}-{name}', b'\x01' + chunk)
            if comp == 1:
                save('snappy', f'g{i}-{name}', chunk[20:])
            elif comp == 2:
                save('gzip', f'g{i}-{name}', chunk[20:])
# TFRecord seeds: the committed golden TFRecord files (uncompressed ones), with mode bytes 0 and 1
# (1: the fuzzer recomputes the CRCs, so mutations reach the length and framing logic).
tfrecords = os.path.join(root, 'packages', 'recordio', 'test', 'golden-tfrecord')
if os.path.isdir(tfrecords):
    for name in sorted(os.listdir(tfrecords)):
        if name.endswith('.tfrecord'):
            data = open(os.path.join(tfrecords, name), 'rb').read()[:max_len - 1]
            for mode in (0, 1):
                save('tfrecord', f'g{mode}-{name}', bytes([mode]) + data)
PY
}

# fuzz_run BUILD_DIR TARGET SECONDS CORPUS_DIR SEED_DIR LOG [extra libFuzzer flags...]: runs one
# target; new inputs go to CORPUS_DIR. Returns libFuzzer's status (non-zero on a crash).
fuzz_run() {
  local build=$1 target=$2 seconds=$3 corpus=$4 seed=$5 log=$6
  shift 6
  mkdir -p "$corpus"
  "$build/native/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len="$EDL_FUZZ_MAX_LEN" \
    -dict="$EDL_FUZZ_ROOT/native/fuzz/dict/$(fuzz_dict "$target")" \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$build/fuzz_$target-" \
    "$@" "$corpus" "$seed" >"$log" 2>&1
}

# fuzz_summary LOG: "N execs, E/s, cov C ft F, corpus K" from a libFuzzer log.
fuzz_summary() {
  local log=$1
  local execs per_s cov
  execs=$(grep -Eo '^stat::number_of_executed_units:[[:space:]]+[0-9]+' "$log" | awk '{print $2}')
  per_s=$(grep -Eo '^stat::average_exec_per_sec:[[:space:]]+[0-9]+' "$log" | awk '{print $2}')
  cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' || true)
  echo "${execs:-?} execs, ${per_s:-?}/s, ${cov:-no coverage line}"
}
