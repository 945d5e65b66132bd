"""mapsat's Python package against numpy: the interpreter, kernels run on pocl, a tune, and
refusals as `mapsat.Error` (never a crash). Run by scripts/test.sh (scripts/python.sh builds the
package into target/py-venv first)."""

import json
import os
import pathlib
import random
import re
import subprocess
import sys

import numpy as np
import pytest

import mapsat

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DEVICE = "opencl:0:0"

SEVERAL_KERNELS = """
size N = 32
def twice(x: [f32]N) : [f32]N =
  let y = toGlobal(map@A(fun(v => v * 2.0), x)) in
  map@B(fun(v => v + 1.0), y)
"""


def rng(seed=0):
    return np.random.default_rng(seed)


def test_eval_of_matmul_is_numpy_product_with_sizes_from_the_shapes():
    p = mapsat.Program.load(EXAMPLES / "matmul.lift")
    a, b = rng().random((13, 7)), rng(1).random((7, 5))
    assert p.sizes(a, b) == {"M": 13, "K": 7, "N": 5}
    got = p.eval(a, b)
    assert got.dtype == np.float32 and got.shape == (13, 5)
    np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5)
    assert p.result_type(a=a, b=b) == "[[f32]5]13"


def test_inputs_by_name_and_given_sizes():
    p = mapsat.Program.load(EXAMPLES / "dot.lift")
    x, y = rng().random(10), rng(2).random(10)
    got = p.eval(y=y, x=x)
    assert got.shape == ()
    assert abs(float(got) - float(np.dot(x.astype(np.float32), y.astype(np.float32)))) < 1e-5
    assert p.sizes(sizes={"N": 3}) == {"N": 3}


def test_every_sampled_mapping_runs_on_pocl_as_numpy_computes():
    p = mapsat.Program.load(EXAMPLES / "stencil1d.lift")
    xs = rng().standard_normal(37).astype(np.float32)
    padded = np.pad(xs, 1)
    want = 0.25 * padded[:-2] + 0.5 * padded[1:-1] + 0.25 * padded[2:]
    mappings = p.mappings(n=4, seed=3, xs=xs)
    assert len(mappings) == 4 and len(set(mappings)) == 4
    for m in mappings:
        assert p.explain(m, xs=xs) == []
        r = p.run(xs, mapping=m, device=DEVICE, runs=2)
        np.testing.assert_allclose(r.output, want, rtol=1e-5, atol=1e-6)
        assert r.median_ms > 0 and r.min_ms <= r.median_ms


def test_generated_elementwise_pipelines_agree_with_numpy():
    ops = [
        ("v + 1.5", lambda v: v + np.float32(1.5)),
        ("v * 2.0", lambda v: v * np.float32(2.0)),
        ("max(v, 0.0)", lambda v: np.maximum(v, np.float32(0.0))),
        ("v * v - v", lambda v: v * v - v),
    ]
    gen = random.Random(7)
    for case in range(6):
        chain = [gen.choice(ops) for _ in range(gen.randint(1, 3))]
        n = gen.choice([1, 5, 17, 64])
        body = "x"
        for i, (text, _) in enumerate(chain):
            body = f"map@M{i}(fun(v => {text}), {body})"
        reduce = case % 2 == 1
        result = "f32" if reduce else "[f32]N"
        if reduce:
            body = f"reduce(add, 0.0, {body})"
        p = mapsat.Program(f"size N = 8\ndef g(x: [f32]N) : {result} =\n  {body}\n", f"case{case}")
        x = rng(case).standard_normal(n).astype(np.float32)
        want = x
        for _, f in chain:
            want = f(want)
        if reduce:
            want = want.sum(dtype=np.float32)
        np.testing.assert_allclose(p.eval(x), want, rtol=1e-4, atol=1e-4)
        m = p.mappings(n=1, seed=case, x=x)[0]
        np.testing.assert_allclose(p.run(x, mapping=m, device=DEVICE, runs=1).output, want, rtol=1e-4, atol=1e-4)


def test_emit_gives_source_and_launch_for_both_targets():
    p = mapsat.Program.load(EXAMPLES / "matmul.lift")
    for target, marker in [("opencl", "__kernel"), ("cuda", "__global__")]:
        k = p.emit("A=G1,B=G0,C=S", target=target, sizes={"M": 16, "K": 8, "N": 12})
        assert marker in k.source and "matmul" in k.source
        assert k.manifest["launch"]["global"][:2] == [12, 16]


def test_a_tune_finds_a_kernel_that_computes_the_product(tmp_path):
    p = mapsat.Program.load(EXAMPLES / "matmul.lift")
    a, b = rng().random((16, 8), dtype=np.float32), rng(1).random((8, 12), dtype=np.float32)
    best = p.tune(a=a, b=b, device=DEVICE, trials=4, random_trials=2, out=tmp_path)
    assert best.mapping and best.time_ms > 0 and best.sizes == {"M": 16, "K": 8, "N": 12}
    assert (tmp_path / "report.json").is_file() and (tmp_path / "tune.jsonl").is_file()
    assert p.explain(best.mapping, a=a, b=b) == []
    r = p.run(a, b, mapping=best.mapping, local=best.local, sizes=best.sizes, device=DEVICE)
    np.testing.assert_allclose(r.output, a @ b, rtol=1e-4)


def test_a_tune_starts_from_the_learned_model_of_another(tmp_path):
    p = mapsat.Program.load(EXAMPLES / "matmul.lift")
    first = p.tune(sizes={"M": 16, "K": 8, "N": 12}, device=DEVICE, trials=6, batch=3, random_trials=1,
                   out=tmp_path / "a")
    assert first.model and os.path.isfile(first.model)
    second = p.tune(sizes={"M": 8, "K": 24, "N": 8}, device=DEVICE, trials=3, batch=3, random_trials=1,
                    out=tmp_path / "b", model=first.model)
    log = [json.loads(line) for line in open(tmp_path / "b" / "tune.jsonl")]
    guided = [t for t in log if t.get("kind") == "trial" and t.get("phase") == "guided"]
    # The first batch is ranked by the prior model: each trial carries its score.
    assert guided and all(t.get("learned_score") is not None for t in guided), guided
    assert second.mapping and p.explain(second.mapping, sizes=second.sizes) == []
    with pytest.raises(mapsat.Error, match="resume continues one"):
        p.tune(sizes={"M": 8, "K": 24, "N": 8}, device=DEVICE, out=tmp_path / "b", model=first.model,
               resume=True)
    with pytest.raises(mapsat.Error, match="not a mapsat cost model"):
        p.tune(device=DEVICE, out=tmp_path / "c", model=tmp_path / "b" / "report.json")


def test_integer_inputs_are_converted_when_they_fit():
    p = mapsat.Program("size N = 4\ndef s(x: [i32]N) : i32 = reduce(add, 0, x)", "s")
    x = np.arange(-5, 9, dtype=np.int64)
    assert int(p.eval(x)) == int(x.sum())
    with pytest.raises(mapsat.Error, match="outside its range"):
        p.eval(np.array([2**40], dtype=np.int64))
    with pytest.raises(mapsat.Error, match="cannot be given"):
        p.eval(np.ones(4, dtype=np.float32))


def test_bad_programs_and_calls_raise_mapsat_errors(tmp_path):
    with pytest.raises(mapsat.Error) as e:
        mapsat.Program("def f(x: [f32]N) =\n  map(fun(y => y + z), x)", "bad.lift")
    assert "unknown name `z`" in str(e.value) and "bad.lift:2:20" in str(e.value)
    with pytest.raises(mapsat.Error, match="cannot read"):
        mapsat.Program.load(EXAMPLES / "no-such-file.lift")
    big = tmp_path / "big.lift"
    with open(big, "wb") as f:
        f.truncate(17 << 20)
    with pytest.raises(mapsat.Error, match="larger than 16 MiB"):
        mapsat.Program.load(big)
    # A device and a FIFO are refused unread (open(2) of the FIFO blocked for ever).
    os.mkfifo(tmp_path / "fifo")
    for special in ["/dev/zero", tmp_path / "fifo"]:
        with pytest.raises(mapsat.Error, match="not a regular file"):
            mapsat.Program.load(special)
    p = mapsat.Program.load(EXAMPLES / "matmul.lift")
    a, b = np.ones((4, 3)), np.ones((3, 2))
    with pytest.raises(mapsat.Error, match="size `K` is 3"):
        p.eval(a, np.ones((4, 2)))
    with pytest.raises(mapsat.Error, match="no parameter 'c'"):
        p.eval(a, b, c=a)
    with pytest.raises(mapsat.Error, match="no input for parameter `b`"):
        p.eval(a)
    with pytest.raises(mapsat.Error, match="not valid"):
        p.run(a, b, mapping="A=G0,B=G0,C=S", device=DEVICE)
    with pytest.raises(mapsat.Error, match="does not give a code"):
        p.emit("A=G0")
    with pytest.raises(mapsat.Error):
        p.run(a, b, mapping="A=G0,B=S,C=S", device="opencl:9:9")
    with pytest.raises(mapsat.Error, match="no size variable `Q`"):
        p.sizes(sizes={"Q": 3})
    # Messages name Python's keywords, not the command line's flags.
    q = mapsat.Program("size N\ndef f(x: [f32]N) : [f32]N = map(fun(v => v + 1.0), x)", "f")
    with pytest.raises(mapsat.Error, match='give sizes=\\{"N": VALUE\\}'):
        q.count()
    with pytest.raises(mapsat.Error, match="^error: trials must be at least 1"):
        q.tune(sizes={"N": 8}, trials=0, device=DEVICE)


def box3(a, axis):
    """numpy's 3-tap mean along ``axis``, the edges clamped (sepblur's padClamp and slide)."""
    p = np.pad(a, [(1, 1) if d == axis else (0, 0) for d in range(a.ndim)], mode="edge")
    n = a.shape[axis]
    return sum(np.take(p, range(k, k + n), axis=axis) for k in range(3)) / 3


def test_a_program_of_several_kernels_is_mapped_emitted_and_run_kernel_by_kernel():
    p = mapsat.Program.load(EXAMPLES / "sepblur.lift")
    img = rng().random((12, 20), dtype=np.float32)
    want = box3(box3(img, 1), 0)
    np.testing.assert_allclose(p.eval(img), want, rtol=1e-5)
    mappings = p.mappings(4, img=img)
    assert len(mappings) == 4 and len(set(mappings)) == 4
    # Each names the maps of both kernels, and is valid in each kernel's space.
    assert all(sorted(x.split("=")[0] for x in m.split(",")) == ["A", "B", "C", "D"] for m in mappings)
    assert p.count(img=img) >= 4
    for m in mappings:
        assert p.explain(m, img=img) == []
        r = p.run(img, mapping=m, device=DEVICE)
        np.testing.assert_allclose(r.output, want, rtol=1e-5)
        assert list(r.kernels) == ["sepblur_0_h", "sepblur"]
        assert r.median_ms == pytest.approx(sum(r.kernels.values()))
    bad = p.explain("A=G0,B=S,C=S,D=W0", img=img)
    assert bad and all(v.startswith("in the kernel of stage `sepblur`") for v in bad)
    with pytest.raises(mapsat.Error, match="in the kernel of stage `sepblur`"):
        p.run(img, mapping="A=G0,B=S,C=S,D=W0", device=DEVICE)
    with pytest.raises(mapsat.Error, match="unknown map `Z`"):
        p.run(img, mapping="A=G0,B=S,C=G0,D=S,Z=S", device=DEVICE)
    # A work group for one kernel by name; a kernel the program does not have is refused.
    r = p.run(img, mapping="A=G1,B=G0,C=G1,D=G0", local={"sepblur_0_h": [4, 2]}, device=DEVICE)
    np.testing.assert_allclose(r.output, want, rtol=1e-5)
    with pytest.raises(mapsat.Error, match="does not have"):
        p.run(img, mapping="A=G1,B=G0,C=G1,D=G0", local={"blur": [4, 2]}, device=DEVICE)
    e = p.emit("A=G1,B=G0,C=G1,D=G0", local={"sepblur": [4, 4]}, img=img)
    assert isinstance(e, mapsat.Pipeline) and len(e.kernels) == 2
    assert [k["inputs"] for k in e.pipeline["kernels"]] == [["param:img"], ["stage:sepblur_0_h"]]
    assert e.pipeline["global_bytes"] == 3 * 12 * 20 * 4
    assert e.kernels[1].manifest["launch"]["local"][:2] == [4, 4]
    assert "void sepblur_0_h(" in e.kernels[0].source and "void sepblur(" in e.kernels[1].source


def test_a_kernel_boundary_nothing_reads_is_warned_about_and_not_launched():
    text = '''size N = 9
def f(xs: [f32]N) : [f32]N =
  let a = toGlobal(map@A(fun(x => x * 2.0), xs)) in
  let d = toGlobal(map@D(fun(x => x * 3.0), a)) in
  map@B(fun(x => x + 1.0), a)'''
    with pytest.warns(UserWarning, match="`d` is not used by the program's result: its kernel is not launched"):
        p = mapsat.Program(text, "dead.lift")
    xs = rng().random(9, dtype=np.float32)
    r = p.run(xs, mapping="A=G0,B=G0", device=DEVICE)
    np.testing.assert_allclose(r.output, xs * 2 + 1, rtol=1e-6)
    assert list(r.kernels) == ["f_0_a", "f"]
    with pytest.raises(mapsat.Error, match="unknown map `D`"):
        p.run(xs, mapping="A=G0,B=G0,D=G0", device=DEVICE)


def test_a_program_of_several_kernels_is_tuned_kernel_by_kernel(tmp_path):
    p = mapsat.Program(SEVERAL_KERNELS, "twice.lift")
    x = rng().random(32, dtype=np.float32)
    best = p.tune(x=x, device=DEVICE, trials=4, random_trials=2, out=tmp_path)
    assert [k.report["program"] for k in best.kernels] == ["twice_0_y", "twice"]
    assert sorted(x.split("=")[0] for x in best.mapping.split(",")) == ["A", "B"]
    assert best.time_ms == pytest.approx(sum(k.time_ms for k in best.kernels))
    for k in best.kernels:
        assert (tmp_path / k.report["program"] / "tune.jsonl").is_file() and k.source
    # The pipeline file, as the command line writes it: each kernel's best and mapped program.
    pipeline = json.loads((tmp_path / "twice.pipeline.json").read_text())
    assert [k["kernel"] for k in pipeline["kernels"]] == ["twice_0_y", "twice"]
    assert pipeline["best_ms"] == pytest.approx(sum(k["best_ms"] for k in pipeline["kernels"]))
    for k in pipeline["kernels"]:
        assert (tmp_path / k["lift"]).is_file(), k
    # Built as the tune built it (reassociating), checked against the interpreter.
    r = p.run(x, mapping=best.mapping, local=best.local, sizes=best.sizes, device=DEVICE, reassociate=True)
    np.testing.assert_allclose(r.output, x * 2 + 1, rtol=1e-6)
    # A kernel with nothing to map is tuned as its one mapping, the empty one (one work item),
    # and the program's other kernel as usual (the whole program was refused).
    q = mapsat.Program("""size N = 32
def s(x: [f32]N) : f32 =
  let y = toGlobal(map@A(fun(v => v * 2.0), x)) in
  reduce(fun(a, v => a + v), 0.0, y)""", "s.lift")
    best = q.tune(x=x, device=DEVICE, trials=2, random_trials=0, out=tmp_path / "s")
    assert [k.report["program"] for k in best.kernels] == ["s_0_y", "s"]
    assert best.mapping.split("=")[0] == "A" and "," not in best.mapping, best.mapping
    r = q.run(x, mapping=best.mapping, local=best.local, sizes=best.sizes, device=DEVICE)
    np.testing.assert_allclose(r.output, (x * 2).sum(), rtol=1e-5)


def test_scalar_parameters_are_given_as_numbers_or_0d_arrays():
    # Listing 3 of the paper: X * y + z; a scalar was made 1-d and refused (a tester's finding).
    p = mapsat.Program.load(EXAMPLES / "listing3.lift")
    x = rng().random(64, dtype=np.float32)
    for y, z in [(2.0, 1.0), (np.float32(2.0), np.array(1.0))]:
        np.testing.assert_allclose(p.eval(x, y, z), x * 2 + 1, rtol=1e-6)
    m = p.mappings(n=1, seed=1, X=x)[0]
    # An infinite timeout is no limit (it was refused as not a positive number of seconds).
    r = p.run(x, 2.0, 1.0, mapping=m, device=DEVICE, timeout=float("inf"))
    np.testing.assert_allclose(r.output, x * 2 + 1, rtol=1e-6)


def test_a_run_past_its_timeout_raises():
    # In a process of its own: the kernel cannot be stopped, and it keeps the device busy for
    # the rest of the process (a later run there would wait for it).
    code = """
import numpy as np, mapsat
p = mapsat.Program("def f(xs: [f32]10) : f32 = reduce(add, 0.0, pad(1000000000000, 1000000000000, 0.0, xs))", "hang")
try:
    p.run(np.ones(10), device="opencl:0:0", runs=1, timeout=1.0)
except mapsat.Error as e:
    print(e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "did not finish within 1" in out.stdout, out.stdout + out.stderr


def test_a_tune_without_a_correct_candidate_raises(tmp_path):
    p = mapsat.Program.load(EXAMPLES / "stencil1d.lift")
    with pytest.raises(mapsat.Error, match="no candidate ran correctly") as e:
        p.tune(sizes={"N": 16}, device=DEVICE, trials=2, random_trials=0, timeout=0.001, out=tmp_path)
    # How they failed, as the command line says it: each timed out.
    assert re.search(r"\(see the report in .*\): \d timeout, e\.g\. ", str(e.value)), str(e.value)
    with pytest.raises(mapsat.Error, match="positive number of seconds"):
        p.tune(device=DEVICE, trials=1, timeout=0, out=tmp_path)


def test_inputs_of_another_rank_and_files_that_are_not_regular_are_refused(tmp_path):
    st = mapsat.Program.load(EXAMPLES / "stencil1d.lift")
    mm = mapsat.Program.load(EXAMPLES / "matmul.lift")
    # An input of another rank than its parameter's gives no sizes (it gave N=5, M=3, K=4).
    with pytest.raises(mapsat.Error, match=r"parameter `xs` expects an array of 1 dimension"):
        st.sizes(np.ones((5, 7)))
    with pytest.raises(mapsat.Error, match=r"parameter `a` expects an array of 2 dimension"):
        mm.count(a=np.ones((3, 4, 5)))
    # A profile or model that is a device (read forever) or a FIFO (blocks) is refused unread.
    with pytest.raises(mapsat.Error, match="not a regular file"):
        mm.count(target="/dev/zero")
    with pytest.raises(mapsat.Error, match="not a regular file"):
        st.tune(trials=1, random_trials=0, model="/dev/zero", out=tmp_path / "m")
    with pytest.raises(mapsat.Error, match="empty path"):
        st.tune(trials=1, random_trials=0, out="")


def test_arguments_of_the_wrong_kind_raise_mapsat_errors():
    p = mapsat.Program.load(EXAMPLES / "matmul.lift")
    a, b = np.ones((4, 3)), np.ones((3, 2))
    for call in [
        lambda: p.eval(a, b, sizes={"M": 2**70}),
        lambda: p.eval(a, b, sizes={"M": "x"}),
        lambda: p.eval(a, b, sizes=[("M", 4)]),
        lambda: p.mappings(n=-1),
        lambda: p.mappings(seed=2**64),
        lambda: p.run(a, b, mapping="A=G0,B=S,C=S", runs=-1, device=DEVICE),
        lambda: p.run(a, b, mapping="A=G0,B=S,C=S", local="4", device=DEVICE),
        lambda: p.eval([[1, 2], [3]], b),
        lambda: mapsat.Program(b"def f(x: f32) = x"),
        lambda: mapsat.Program("def f(x: f32) = x \ud800"),
        lambda: mapsat.Program("// " + "x" * (17 << 20)),
        lambda: p.run(a, b, mapping=3, device=DEVICE),
        lambda: p.run(a, b, mapping="A=G0,B=S,C=S", device=3),
        lambda: p.run(a, b, mapping="A=G0,B=S,C=S", check="no", device=DEVICE),
        lambda: p.run(a, b, mapping="A=G0,B=S,C=S", timeout="5", device=DEVICE),
        lambda: p.explain(3),
        lambda: p.mappings(target=3),
        lambda: p.emit("A=G0,B=S,C=S", profile=3),
        lambda: p.tune(out=3, device=DEVICE),
        lambda: p.eval(np.ma.masked_array(a, mask=a > 0), b),
        lambda: mapsat.Program.load(None),
    ]:
        with pytest.raises(mapsat.Error):
            call()


def test_a_file_descriptor_is_no_path_and_is_left_open():
    with open(EXAMPLES / "sum.lift") as f:
        for fd in [f.fileno(), False]:
            with pytest.raises(mapsat.Error, match="must be a path"):
                mapsat.Program.load(fd)
        assert "def" in f.read()


def test_a_program_pickles_and_copies():
    import copy
    import pickle
    p = mapsat.Program.load(EXAMPLES / "matmul.lift")
    q = pickle.loads(pickle.dumps(p))
    a, b = rng().random((4, 3), dtype=np.float32), rng(1).random((3, 5), dtype=np.float32)
    np.testing.assert_array_equal(q.eval(a, b), p.eval(a, b))
    assert str(q) == str(p) and copy.deepcopy(p) is p


def test_a_parameter_named_like_an_option_is_given_in_inputs():
    p = mapsat.Program("size N = 4\ndef f(seed: [f32]N, device: [f32]N) : [f32]N = "
                       "map@A(fun(q => q.0 + q.1), zip(seed, device))", "f")
    x = np.arange(6, dtype=np.float32)
    with pytest.raises(mapsat.Error, match="inputs="):
        p.mappings(2, seed=x, device=x)
    assert len(p.mappings(2, inputs={"seed": x, "device": x})) == 2
    r = p.run(inputs={"seed": x, "device": x}, mapping="A=G0", device=DEVICE)
    np.testing.assert_allclose(r.output, 2 * x)
    with pytest.raises(mapsat.Error, match="given twice"):
        p.eval(x, inputs={"seed": x, "device": x})
    # A parameter named `self` is given by keyword (a TypeError: "multiple values for argument
    # 'self'"), one named `sizes` is refused with the hint (it said "no input for parameter").
    q = mapsat.Program("size N = 4\ndef g(self: [f32]N, sizes: [f32]N) : [f32]N = "
                       "map@A(fun(q => q.0 * q.1), zip(self, sizes))", "g")
    y = x[:4]
    with pytest.raises(mapsat.Error, match=r"no input for parameter `sizes` \(.*inputs=\{'sizes': array\}"):
        q.eval(self=y, sizes=y)
    np.testing.assert_allclose(q.eval(self=y, inputs={"sizes": y}), y * y)


def test_a_forked_child_of_a_device_user_is_refused_not_hung():
    code = """
import os, numpy as np, mapsat
mapsat.devices()
pid = os.fork()
if pid == 0:
    p = mapsat.Program("size N = 4\\ndef f(x: [f32]N) : [f32]N = map@A(fun(v => v * 2.0), x)")
    try:
        p.run(np.ones(4), mapping="A=G0", timeout=30)
        os._exit(3)
    except mapsat.Error as e:
        os._exit(0 if "forked" in str(e) else 4)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "child 0" in out.stdout, out.stdout + out.stderr


def test_an_interrupted_tune_stops_measuring(tmp_path):
    # Ctrl-C once a long tune has measured a few candidates: the tune stops before its next
    # measurement (it went on in the background, measuring, and wrote its report later), and
    # does not record the one it was measuring.
    code = f"""
import os, signal, threading, time, numpy as np, mapsat
p = mapsat.Program.load({str(EXAMPLES / "matmul.lift")!r})
log = {str(tmp_path / "tune.jsonl")!r}
def interrupt():
    for _ in range(600):
        if os.path.exists(log) and sum(1 for _ in open(log)) >= 4:
            break
        time.sleep(0.2)
    # To the process group, as a terminal's Ctrl-C: the measurement worker gets it too.
    os.killpg(os.getpgid(0), signal.SIGINT)
threading.Thread(target=interrupt, daemon=True).start()
try:
    p.tune(sizes={{"M": 32, "K": 32, "N": 32}}, trials=500, random_trials=0, out={str(tmp_path)!r})
except KeyboardInterrupt:
    time.sleep(1.0)
    before = sum(1 for _ in open(log))
    time.sleep(4.0)
    after = sum(1 for _ in open(log))
    print("records", before, after)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         start_new_session=True)
    words = out.stdout.split()
    assert words[:1] == ["records"], out.stdout + out.stderr
    before, after = int(words[1]), int(words[2])
    assert before > 1 and after == before, out.stdout
    assert not (tmp_path / "report.json").exists()
    # The measurement the interrupt killed is not recorded (as a crash, never measured again
    # by a resumed tune).
    assert '"crash"' not in (tmp_path / "tune.jsonl").read_text()


def test_a_long_chain_is_evaluated_on_mapsats_own_stack():
    terms = " + ".join(["v"] * 2000)
    p = mapsat.Program(f"size N = 3\ndef f(x: [f32]N) : [f32]N = map@A(fun(v => {terms}), x)", "long")
    x = np.array([1.0, 2.0, 0.5], dtype=np.float32)
    np.testing.assert_allclose(p.eval(x), x * 2000, rtol=1e-5)


def test_devices_lists_pocl():
    assert any("Portable Computing Language" in d or "pocl" in d.lower() for d in mapsat.devices())


def test_tile_defaults_that_do_not_divide_unaligned_arrays_and_a_change_of_directory(tmp_path, monkeypatch):
    # matmul_tiled's tile sizes default to 4, which does not divide N = 6: the tune searches
    # them, as `mapsat tune` does (it was refused: "split factor 4 does not divide ... 6").
    p = mapsat.Program.load(EXAMPLES / "matmul_tiled.lift")
    best = p.tune(sizes={"M": 12, "K": 9, "N": 6}, device=DEVICE, trials=2, random_trials=0, out=tmp_path / "t")
    assert 6 % best.sizes["tN"] == 0, best.sizes
    # Counting at those sizes checks at the defaults, and says which default did not divide.
    with pytest.raises(mapsat.Error, match=r'tunable size\(s\) tN = 4; give another with `sizes=\{"NAME": VALUE\}`'):
        p.count(sizes={"M": 12, "K": 9, "N": 6})
    a, b = rng().random((12, 9), dtype=np.float32), rng(1).random((9, 6), dtype=np.float32)
    # An f32 array at an odd offset of its buffer is copied (the extension panicked reading it).
    unaligned = np.frombuffer(b"\0" + a.tobytes(), dtype=np.float32, offset=1).reshape(12, 9)
    assert not unaligned.flags.aligned
    r = p.run(unaligned, b, mapping=best.mapping, local=best.local, sizes=best.sizes, device=DEVICE)
    np.testing.assert_allclose(r.output, a @ b, rtol=1e-5)
    # A program loaded by a relative name keeps its file from a tune after a change of
    # directory (the name then named another file, and the tune wrote over the program).
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "matmul.lift").write_text((EXAMPLES / "matmul.lift").read_text())
    monkeypatch.chdir(tmp_path)
    own = mapsat.Program.load("own/matmul.lift")
    monkeypatch.chdir(tmp_path / "t")
    with pytest.raises(mapsat.Error, match="would overwrite the input program"):
        own.tune(device=DEVICE, trials=1, random_trials=0, out=tmp_path / "own")
