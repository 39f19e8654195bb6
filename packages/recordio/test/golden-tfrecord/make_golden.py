#!/usr/bin/env python3
"""Writes the golden TFRecord files with an implementation independent of elasticdl-ts.

Examples are built and serialized by Debian's python3-protobuf from Python modules that protoc
generates from the vendored TensorFlow protos (packages/proto/proto/tensorflow); the TFRecord
framing, its CRC-32C and the gzip/zlib streams are written here, with Python's own zlib and gzip.
Everything is deterministic: the tests run this script into a scratch directory and compare the
bytes with the committed files.

Usage: make_golden.py OUT_DIR
"""
import gzip
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.join(HERE, '..', '..', '..', 'proto', 'proto')


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(record):
    length = struct.pack('<Q', len(record))
    return length + struct.pack('<I', masked(crc32c(length))) + record + struct.pack('<I', masked(crc32c(record)))


def load_example_pb2(tmp):
    subprocess.run(
        ['protoc', f'--proto_path={PROTO_ROOT}', f'--python_out={tmp}',
         'tensorflow/core/example/feature.proto', 'tensorflow/core/example/example.proto'],
        check=True)
    sys.path.insert(0, tmp)
    from tensorflow.core.example import example_pb2  # noqa: E402
    return example_pb2


def build_examples(example_pb2, count):
    examples = []
    for k in range(count):
        ex = example_pb2.Example()
        f = ex.features.feature
        # Floats that float32 holds exactly, so every implementation prints and parses them alike.
        f['x'].float_list.value.extend([k / 8, -k / 4, 0.5])
        f['label'].int64_list.value.append(k % 3)
        f['id'].int64_list.value.append(-(k * 1000003) if k % 2 else k * 1000003)
        f['name'].bytes_list.value.append(f'ex-{k}'.encode())
        f['tags'].int64_list.value.extend(range(k % 4))  # ragged: 0 to 3 values
        if k % 5 != 4:
            f['weight'].float_list.value.append(1 + k / 16)  # missing from every 5th
        examples.append(ex)
    return examples


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        example_pb2 = load_example_pb2(tmp)
        from google.protobuf import json_format
        examples = build_examples(example_pb2, 24)
        serialized = [ex.SerializeToString(deterministic=True) for ex in examples]
        plain = b''.join(frame(r) for r in serialized)
        files = {
            'examples.tfrecord': (plain, len(serialized), '24 tf.train.Examples, uncompressed'),
            'examples.tfrecord.gz': (gzip.compress(plain, compresslevel=6, mtime=0), len(serialized),
                                     'the same records, the whole stream GZIP-compressed (TFRecordOptions GZIP)'),
            'examples.tfrecord.zz': (zlib.compress(plain, 6), len(serialized),
                                     'the same records, the whole stream ZLIB-compressed (TFRecordOptions ZLIB)'),
            'empty-records.tfrecord': (frame(b'') + frame(b'a') + frame(b''), 3,
                                       'records "", "a", "" (not Examples)'),
        }
        bad = bytearray(plain)
        offsets = []
        at = 0
        for r in serialized:
            offsets.append(at)
            at += 16 + len(r)
        bad[offsets[3] + 12] ^= 0xFF  # first data byte of record 3: its data CRC fails
        files['bad-data-crc.tfrecord'] = (bytes(bad), 3,
                                          f'record 3 (at byte {offsets[3]}) has a bad data CRC; records 0-2 are good')
        files['truncated.tfrecord'] = (plain[:offsets[5] + 20], 5,
                                       f'cut 20 bytes into record 5 (at byte {offsets[5]}); records 0-4 are whole')
        manifest = ['# Golden TFRecord files, written by make_golden.py (python3-protobuf + protoc on the',
                    '# vendored TensorFlow protos; framing, CRC-32C, gzip and zlib in Python).',
                    '# name  sha256  readable-records  description']
        for name, (data, records, what) in files.items():
            with open(os.path.join(out, name), 'wb') as fh:
                fh.write(data)
            manifest.append(f'{name}  {hashlib.sha256(data).hexdigest()}  {records}  {what}')
        with open(os.path.join(out, 'MANIFEST.txt'), 'w') as fh:
            fh.write('\n'.join(manifest) + '\n')
        # The proto3 JSON mapping of each Example, as protobuf's json_format prints it.
        with open(os.path.join(out, 'examples.jsonl'), 'w') as fh:
            for ex in examples:
                fh.write(json.dumps(json.loads(json_format.MessageToJson(ex)), sort_keys=True) + '\n')


if __name__ == '__main__':
    main()
