"""packThreads and seqFilter (fcl.codegen.lower.packing): the sizes the compiler refuses,
with located errors, and the generated form of packWhereBy (each work-item's run in its
registers, the staging area where the chunk was).  Their values are in
tests/programs/pack_threads.fcl, checked on every device by test_codegen, test_interp and
test_oclgrind."""
import re

import pytest

import fcl
from fcl.base.errors import CompilerLimitation

SOURCE = """
fun argLength m = force (packConcat 64 1 (fn g => packThreads m 8 (fn t => seqFilter (fn i => fn x => x > t) (iota 4))))
fun manyParts a = force (packConcat 2048 1 (fn g => packThreads 4 512 (fn t => seqFilter (fn i => fn x => x > t) a)))
fun keep a = force (packWhereBy (scanChunkOf 0) (fn i => fn x => x < 50) a)
"""


def program():
    return fcl.load(SOURCE)


@pytest.mark.parametrize("entry, words", [("argLength", "must be constants"),
                                          ("manyParts", "512 parts, more than the 256 work-items")])
def test_sizes_the_compiler_cannot_stage_are_located_refusals(entry, words):
    assert len(program().evaluate(entry, *([3] if entry == "argLength" else [[1, 2, 3]]))) > 0
    with pytest.raises(CompilerLimitation) as e:
        program().compile(entry, block_size=256, dynamic=True).opencl_source
    assert e.value.what == "local-size" and words in str(e.value) and e.value.span.line == 2 + (entry == "manyParts")


def test_pack_where_by_keeps_runs_in_registers_and_stages_where_the_chunk_was():
    src = program().compile("keep", block_size=256, local_memory=49152).opencl_source
    assert "private, 32 x int" in src                 # a work-item's run of 32, in registers
    kernels = [k for k in src.split("__kernel") if "private, 32 x int" in k]
    assert kernels
    for k in kernels:                                 # the chunk and the staged runs share one area
        sizes = [int(n) for n in re.findall(r"__local int l\d+\[(\d+)\]", k)]
        assert sum(n >= 8192 for n in sizes) == 1, sizes


def test_pack_where_by_writes_as_a_hand_written_compaction_does():
    """The kept elements staged skewed (neighbouring work-items' runs start where the data
    says: 16 words apart for half of 32 kept), written out from the 128-byte line below the
    chunk's offset, which elements a run kept held in a bit mask, and no check that a run of
    32 keeps at most 32 (it cannot fail)."""
    k = program().compile("keep", block_size=256, local_memory=49152).opencl_source
    fast = k[k.index("_fast("):]
    assert re.search(r"l\d+\[fcl_skew\(fcl_add\(start\d+, at\d+\)\)\] = ", fast)
    assert re.search(r"& 31\)", fast)
    assert re.search(r"keep\d+ = keep\d+ \| fcl_shl\(1, ", fast)
    assert not re.search(r"fcl_fail\(bounds, \d+, lid, kept\d+", fast)
    assert list(program().compile("keep", block_size=256)([5, 70, 49, 50, 3] * 3000)) == [5, 49, 3] * 3000


SIZES = {"int": 4, "float": 4, "uchar": 1, "double": 8, "long": 8}


def kernel_local_bytes(source: str) -> list[int]:
    """The bytes of local arrays each kernel of `source` declares."""
    return [sum(SIZES[ty] * int(n) for ty, n in re.findall(r"__local (\w+) l\d+\[(\d+)\]", k))
            for k in source.split("__kernel")[1:]]


@pytest.mark.parametrize("path, entry, static", [
    ("examples/scan.fcl", "composePrefixSum", {"n": 5000}),      # one part: no part loop
    ("examples/scan.fcl", "composePrefixSum", None),
    ("bench/programs.fcl", "keepBelow50", None),
    ("bench/programs.fcl", "segSums", None)])
def test_one_pass_kernels_fit_48_kb(path, entry, static):
    """share_local takes the merge that saves the most first: a chunk's tile written in place
    by its scan, not a small buffer in the scan's place (which left two chunks, 69768 bytes,
    where composePrefixSum has one part)."""
    k = fcl.load_file(path).compile(entry, block_size=256, local_memory=49152, static=static)
    assert max(kernel_local_bytes(k.opencl_source)) <= 49152
