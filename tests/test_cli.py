"""The command-line programs as a user runs them: train, evaluate, export, predict, resume."""

import csv
import json
import pathlib
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from dsan_tf.models import registry
from helpers import ENV, ROOT, cli, cli_process, command, ok, shared_once

DEMO = ["--config=demo"]


def history(workdir):
    with open(workdir / "history.csv", newline="") as stream:
        return list(csv.DictReader(stream))


def test_demo_trains_and_leaves_a_complete_run_directory(demo):
    workdir, output = demo
    last = output.strip().splitlines()[-1]
    assert last.startswith("dev accuracy ") and str(workdir / "best.keras") in last
    assert float(last.split()[2]) >= 0.9  # held-out word-order pairs
    for name in ("flags.txt", "config.json", "vocab.json", "best.keras", "best.json",
                 "results.json", "MODEL_CARD.md", "export/1/saved_model.pb",
                 "export/1/MODEL_CARD.md"):
        assert (workdir / name).exists(), name
    config = json.loads((workdir / "config.json").read_text())
    assert config["model_config"]["embedding_dim"] == 32 and config["model"] == "dsan"
    # Each value once: the text settings are the configuration's `data`.
    assert config["data"]["max_length"] == 256 and config["data"]["lowercase"] is False
    assert "max_length" not in config and "lowercase" not in config
    assert not any("max_length" in split for split in config["tokens"].values())
    assert "lower-cased: False; at most 256 tokens a sentence." in \
        (workdir / "MODEL_CARD.md").read_text()
    import tensorflow as tf  # what produced the run is recorded with it
    assert config["provenance"]["tensorflow"] == tf.__version__
    if (ROOT / ".git").exists():
        assert config["provenance"]["git_commit"]
    assert "--embedding_dim=32" in (workdir / "flags.txt").read_text()
    # How it ran: decided once for the backend and device, printed and recorded alike.
    policy = config["policy"]
    assert "training batches (longest) hold " in output  # the planner's strategy
    assert f"how it runs: jit_compile {'on' if policy['jit_compile'] else 'off'}, one_pass " \
        f"{'on' if policy['one_pass'] else 'off'}, steps_per_execution " \
        f"{policy['steps_per_execution']}, " in output
    assert config["outputs"]["export_dir"] == str(workdir / "export") and None not in (
        policy["jit_compile"], policy["bounded_shapes"], policy["sentence_programs"])
    rows = history(workdir)
    # Counted from 1, as the log, results.json and the model card count them.
    assert [int(r["epoch"]) for r in rows] == [1, 2, 3, 4]
    assert all(float(r["seconds"]) > 0 for r in rows)
    events = list((workdir / "tensorboard").rglob("events.out.tfevents.*"))
    assert {p.parent.name for p in events} >= {"train", "validation", "tensorboard", "probe"}


def test_visualize_writes_every_figure(demo, tmp_path):
    workdir, _ = demo
    evaluation = tmp_path / "eval.json"
    ok(cli("evaluate", f"--workdir={workdir}", "--data=synthetic:word_order/dev",
           f"--output={evaluation}"))
    printed = ok(cli("visualize", f"--workdir={workdir}", f"--compare_workdir={workdir}",
                     "--sentence=the dog chased the cat", f"--evaluation=demo={evaluation}",
                     "--distance_data=synthetic:word_order/dev", "--distance_sentences=20",
                     f"--output_dir={tmp_path / 'figures'}"))
    names = {pathlib.Path(line).name for line in printed.split()}
    assert names == {"fig06_length.png", "fig07_attention.png", "fig08_compare.png",
                     "fig09_fusion_gate.png", "fig10_ffn.png", "fig11_pooling.png",
                     "attention_by_distance.png", "attention_by_distance.json"}
    for name in names - {"attention_by_distance.json"}:
        assert (tmp_path / "figures" / name).read_bytes().startswith(b"\x89PNG")
    distances = json.loads((tmp_path / "figures" / "attention_by_distance.json").read_text())
    assert distances["sentences"] == 40 and list(distances["runs"]) == [str(workdir)]
    forward = distances["runs"][str(workdir)]["forward"]
    assert sum(forward["mass"]) == pytest.approx(1.0) and forward["queries"] > 0


def test_evaluate_writes_metrics(demo, tmp_path):
    workdir, _ = demo
    output = tmp_path / "eval.json"
    printed = ok(cli("evaluate", f"--workdir={workdir}", "--data=synthetic:word_order/dev",
                     "--data=synthetic:word_order/all", f"--output={output}"))
    assert "accuracy by average pair length" in printed
    result = json.loads(output.read_text())["sources"]
    dev = result["synthetic:word_order/dev"]
    assert dev["examples"] == 168 == sum(map(sum, dev["confusion_matrix"]))
    assert set(dev["per_class"]) == {"entailment", "neutral", "contradiction"}
    assert dev["oov_rate"] == 0.0  # the generated task has no word outside its vocabulary
    assert sum(b["examples"] for b in result["synthetic:word_order/all"]["accuracy_by_length"]) == 840


FRESH = """
import json, sys
sys.modules["dsan_tf"] = None  # the SavedModel must not need our package
import tensorflow as tf
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["serving_default"](
    premise=tf.constant(["the dog chased the cat", "the boy saw the girl"]),
    hypothesis=tf.constant(["the cat chased the dog", "the boy saw the girl"]))
vectors = model.signatures["encode"](sentences=tf.constant(["the dog", "", "a zebra"]))
print(json.dumps({"probabilities": out["probabilities"].numpy().tolist(),
                  "label": [l.decode() for l in out["label"].numpy()],
                  "embedding_shape": list(vectors["embedding"].shape)}))
"""


def test_export_runs_without_our_package(demo, tmp_path):
    """TF Serving's layout (EXPORT_DIR/<version>/saved_model.pb), a SavedModel that needs no
    dsan_tf, and `dsan_tf.load` giving the same answers from a run, an export or a bare
    SavedModel."""
    import shutil

    import dsan_tf

    workdir, _ = demo
    export = tmp_path / "export"  # what `train --export_dir` wrote: version 1
    shutil.copytree(workdir / "export", export)
    ok(cli("export", f"--workdir={workdir}", f"--export_dir={export}"))
    assert sorted(p.name for p in export.iterdir()) == ["1", "2"]
    taken = cli("export", f"--workdir={workdir}", f"--export_dir={export}", "--version=2")
    assert taken.returncode != 0 and "exists: choose another --version" in taken.stderr
    version = export / "2"
    assert (version / "saved_model.pb").exists() and (version / "model.keras").exists()
    # `train --export_dir` wrote the same complete export (one export path for both).
    files = lambda root: sorted(str(p.relative_to(root)) for p in root.rglob("*")  # noqa
                                if p.is_file())
    assert files(export / "1") == files(version)
    card = (version / "MODEL_CARD.md").read_text()  # the run's card travels with the model
    assert card == (workdir / "MODEL_CARD.md").read_text()
    assert "- dev accuracy: " in card and "dsan-train " in card
    assert "Intended use and limits" in card
    from dsan_tf.data import NLIPreprocessor  # Keras users get the preprocessor back
    assert NLIPreprocessor.load(version).max_length == 256
    fresh = json.loads(ok(subprocess.run([sys.executable, "-c", FRESH, str(version)], env=ENV,
                                         capture_output=True, text=True, timeout=300))
                       .strip().splitlines()[-1])
    bare = tmp_path / "bare"
    shutil.copytree(version, bare, ignore=shutil.ignore_patterns("*.keras", "*.json"))
    premises, hypotheses = ["the dog chased the cat", "the boy saw the girl"], [
        "the cat chased the dog", "the boy saw the girl"]
    for source in (workdir, export, bare, workdir / "best.keras"):  # one load for each
        # A SavedModel alone is a program: read where named trusted.
        loaded = dsan_tf.load(str(source), trust_savedmodel=source == bare)
        out = loaded.classify(premises, hypotheses)
        assert out["labels"] == fresh["label"], source
        np.testing.assert_allclose(out["probabilities"], fresh["probabilities"], atol=1e-5)
        assert loaded.encode(["the dog", "a cat", "a zebra"]).shape == (3, 4 * 32)
        with pytest.raises(ValueError, match=r"sentences\[1\] is empty"):
            loaded.encode(["the dog", " ", "a zebra"])  # not embedded from padding
    # The Keras model with its preprocessor, from the run, the export or best.keras alone
    # (it holds the vocabulary): the numbers of the SavedModel.
    import keras

    for model in (dsan_tf.NLIClassifier.from_preset(workdir),
                  dsan_tf.NLIClassifier.from_preset(export),
                  keras.saving.load_model(workdir / "best.keras")):
        np.testing.assert_allclose(model.predict((premises, hypotheses)),
                                   fresh["probabilities"], atol=1e-5)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="neither a trained model"):
        dsan_tf.load(str(tmp_path / "empty"))
    (tmp_path / "cut.keras").write_bytes((workdir / "best.keras").read_bytes()[:1000])
    with pytest.raises(ValueError, match=r"cut.keras is not a .keras file \(a zip archive\) "
                                         "or is cut short"):
        dsan_tf.load(str(tmp_path / "cut.keras"))
    assert fresh["embedding_shape"] == [3, 4 * 32]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"sentence1": "the dog chased the cat", "sentence2": "the cat chased the dog"}\n'
                     '{"sentence1": "the boy saw the girl", "sentence2": "the boy saw the girl"}\n')
    predicted = [json.loads(line) for line in
                 ok(cli("predict", f"--workdir={workdir}", f"--input={pairs}")).splitlines()
                 if line.startswith("{")]
    assert [p["label"] for p in predicted] == fresh["label"] == ["contradiction", "entailment"]
    for row, expected in zip(predicted, fresh["probabilities"]):
        assert list(row["probabilities"].values()) == pytest.approx(expected, abs=1e-5)
    assert [p["pairID"] for p in predicted] == ["1", "2"]  # line numbers without a pairID


def test_predict_writes_submission_files(demo, tmp_path):
    """MultiNLI's leaderboard and HANS take pairID,gold_label; ids are kept, every pair is
    written once, a bad line is named."""
    workdir, _ = demo
    pairs = tmp_path / "pairs.jsonl"
    # The same, the swapped and another noun's sentence in turn: the labels vary along the
    # file, so a label written beside another pair's id would show.
    hypotheses = ("the dog saw the cat", "the cat saw the dog", "the dog saw the bird")
    pairs.write_text("".join(json.dumps({"pairID": f"p{i}", "sentence1": "the dog saw the cat",
                                         "sentence2": hypotheses[i % 3]}) + "\n"
                             for i in range(300)) + "\n")
    output = tmp_path / "submission.csv"
    result = cli("predict", f"--workdir={workdir}", f"--input={pairs}", "--format=csv",
                 f"--output={output}")
    ok(result)
    rows = list(csv.reader(output.open()))
    assert rows[0] == ["pairID", "gold_label"] and len(rows) == 301
    assert [r[0] for r in rows[1:]] == [f"p{i}" for i in range(300)]
    assert {r[1] for r in rows[1:]} <= {"entailment", "neutral", "contradiction"}
    assert "300 pairs in" in result.stderr and "pairs/s" in result.stderr
    # JSON lines: each pair's label is its own probabilities' argmax and the CSV's label.
    lines = tmp_path / "predictions.jsonl"
    ok(cli("predict", f"--workdir={workdir}", f"--input={pairs}", f"--output={lines}"))
    records = [json.loads(line) for line in lines.read_text().splitlines()]
    assert [r["pairID"] for r in records] == [f"p{i}" for i in range(300)]
    assert [r["hypothesis"] for r in records] == [hypotheses[i % 3] for i in range(300)]
    assert [r["label"] for r in records] == [r[1] for r in rows[1:]]
    assert all(r["label"] == max(r["probabilities"], key=r["probabilities"].get)
               for r in records)
    assert [r["label"] for r in records[:3]] * 100 == [r["label"] for r in records]
    assert len({r["label"] for r in records}) > 1, "the demo model gives one label to all"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sentence1": "a", "sentence2": "b"}\n{"sentence1": "a"}\n')
    refused = cli("predict", f"--workdir={workdir}", f"--input={bad}")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert refused.stderr == (f"error: {bad}:2: expected a JSON object with sentence1 and "
                              "sentence2 (or premise and hypothesis); it has 'sentence1'.\n")
    bad.write_text('["a", "b"]\n')
    assert cli("predict", f"--workdir={workdir}", f"--input={bad}").stderr.endswith(
        "(or premise and hypothesis); it is no object.\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert "holds no sentence pairs" in cli("predict", f"--workdir={workdir}",
                                            f"--input={empty}").stderr


@pytest.mark.slow
def test_mixed_precision_trains_reloads_and_serves(tmp_path):
    """--mixed_precision=mixed_float16 (GPUs): masks stay finite, the run reaches the float32
    demo's accuracy, and its best model reloads and exports without the loss-scale optimizer."""
    workdir = tmp_path / "run"
    output = ok(cli("train", *DEMO, f"--workdir={workdir}", "--epochs=3",
                    "--mixed_precision=mixed_float16", f"--export_dir={workdir / 'export'}"))
    assert float(output.strip().splitlines()[-1].split()[2]) >= 0.9
    assert json.loads((workdir / "config.json").read_text())["training"]["mixed_precision"] == "mixed_float16"
    evaluated = cli("evaluate", f"--workdir={workdir}", "--data=synthetic:word_order/dev")
    ok(evaluated)
    assert "Skipping variable loading" not in evaluated.stderr
    fresh = json.loads(ok(subprocess.run([sys.executable, "-c", FRESH,
                                          str(workdir / "export" / "1")],
                                         env=ENV, capture_output=True, text=True, timeout=300))
                       .strip().splitlines()[-1])
    for row in fresh["probabilities"]:
        assert sum(row) == pytest.approx(1.0, abs=1e-2)


def test_user_mistakes_get_one_sentence(tmp_path):
    missing = cli("train", *DEMO, f"--workdir={tmp_path}", "--train_data=/no/such/file.jsonl")
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
    assert missing.stderr == "error: flag --train_data=/no/such/file.jsonl: no such file.\n"
    no_vectors = cli("train", *DEMO, f"--workdir={tmp_path}", "--embeddings=/no/vectors.txt")
    assert no_vectors.stderr == "error: flag --embeddings=/no/vectors.txt: no such file.\n"
    # A folder given for a file says it is a folder (it said "a file, not a file").
    for flag in ("train_data", "embeddings"):
        folder = cli("train", *DEMO, f"--workdir={tmp_path / 'run'}", f"--{flag}={tmp_path}")
        assert folder.stderr == f"error: flag --{flag}={tmp_path}: a directory, not a file.\n"
    for program, flag in (("evaluate", "data"), ("predict", "input")):
        folder = cli(program, f"--workdir={tmp_path}", f"--{flag}={tmp_path}")
        assert folder.stderr == f"error: flag --{flag}={tmp_path}: a directory, not a file.\n"
    no_workdir = cli("train", *DEMO)
    assert "error: give --workdir" in no_workdir.stderr
    not_a_run = cli("predict", f"--workdir={tmp_path}", "--premise=a", "--hypothesis=b")
    assert "holds neither a trained model" in not_a_run.stderr
    assert "Traceback" not in not_a_run.stderr


def test_nan_loss_stops_with_a_message(tmp_path):
    # The stop is the program's, whatever the family: CBOW traces in a fifth of DSAN's time.
    result = cli("train", *DEMO, f"--workdir={tmp_path}", "--epochs=2", "--steps_per_epoch=4",
                 "--learning_rate=1e30", "--model=cbow")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "training stopped: the loss became nan" in result.stderr


def test_same_seed_same_metrics(tmp_path):
    """Two runs of one seed, dropout on (its seeds too): the same history. The seeding is
    the program's, not a family's: CBOW shows it at a fifth of DSAN's tracing."""
    runs = []
    for name in ("a", "b"):
        ok(cli("train", *DEMO, f"--workdir={tmp_path / name}", "--epochs=2", "--steps_per_epoch=6",
               "--seed=3", "--model=cbow", "--dropout=0.2"))
        runs.append([{k: v for k, v in row.items() if k != "seconds"}
                     for row in history(tmp_path / name)])
    assert runs[0] == runs[1]


@pytest.mark.slow
def test_killed_run_resumes_from_the_last_completed_epoch(tmp_path):
    flags = [*DEMO, f"--workdir={tmp_path}", "--epochs=5"]
    process = subprocess.Popen(command("train", *flags), cwd=ROOT, env=ENV,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    # An epoch is done when its checkpoint is committed (history.csv is written just
    # before: a kill between them trains that epoch again).
    from dsan_tf.core.rundir import RunDirectory

    run = RunDirectory(str(tmp_path))
    while time.monotonic() < deadline and process.poll() is None:
        if run.epochs_done() >= 1:
            break
        time.sleep(0.05)
    assert process.poll() is None, "training ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()
    completed = run.epochs_done()
    assert 1 <= completed < 5
    resumed = ok(cli("train", *flags))
    epochs = [line.split()[1] for line in resumed.splitlines() if line.startswith("Epoch ")]
    assert epochs and epochs[0] != "1/5" and epochs[-1] == "5/5"
    assert int(epochs[0].split("/")[0]) >= completed
    assert [int(r["epoch"]) for r in history(tmp_path)][-1] == 5


PROGRAMS = ("train", "evaluate", "embed", "ensemble", "export", "predict", "summary", "tune",
            "visualize",
            "pipeline_benchmark", "results", "tokenizer_agreement")


def test_usage_lines_are_as_written():
    """The usage lines `--help` prints (each program's docstring): a shell continuation
    `\\` stays one (in a plain string it joined the lines into a run of
    spaces)."""
    import ast

    for path in sorted([*ROOT.glob("dsan_tf/programs/*.py"), *ROOT.glob("experiments/*.py"),
                        *ROOT.glob("benchmarks/*.py")]):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        joined = re.search(r"\S {5,}(--|\[)", doc or "")
        assert joined is None, f"{path.name}: {joined.group(0)!r}"


def test_help_does_not_load_tensorflow():
    """`--help` lists a program's flags without importing TensorFlow (0.3 s, not 5 s)."""
    probe = ("import importlib, importlib.util, sys; "
             "[importlib.import_module(f'{package}.{p}') for p in "
             f"{PROGRAMS!r} for package in ('experiments', 'benchmarks', 'dsan_tf.programs') "
             "if importlib.util.find_spec(f'{package}.{p}')]; "
             "print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=ENV,
                            capture_output=True, text=True, timeout=120)
    assert ok(loaded).split() == ["False", "False"]
    listed = cli("train", "--help").stdout
    assert "--workdir" in listed and "--learning_rate" in listed and "--jit_compile" in listed


def _help_sections(listed):
    """{topic: [--flag, ...]} of a short `--help`."""
    sections, current = {}, None
    for line in listed.split("Flags by topic", 1)[1].splitlines()[1:]:
        if line and not line.startswith(" ") and line.endswith(":"):
            current = line[:-1]
            sections[current] = []
        elif current and line.startswith("  --"):
            sections[current].append(line.split()[0].rstrip(":"))
    return sections


def test_help_is_short_and_grouped_by_topic_with_the_default_familys_flags():
    """`train --help`: a line or two per flag under model, the default family's own model
    flags, data, training, output and the program's own; `--flagfile` named; `--helpfull`
    keeps absl's full listing (defaults, types, absl's own flags, every family's)."""
    listed = ok(cli("train", "--help"))
    sections = _help_sections(listed)
    assert list(sections)[:2] == ["model", "model: dsan's own"]
    assert sections["model"][0] == "--model" and "--config" in sections["model"]
    assert "--pooling" in sections["model: dsan's own"] and "--lstm_units" not in listed
    assert "--train_data" in sections["data"] and "--learning_rate" in sections["training"]
    assert "--workdir" in sections["output"] and "--jit_compile" in sections["training"]
    assert sections["train"] == ["--overwrite"]  # the rest: the configuration's fields
    assert "--flagfile=FILE" in listed and "--model=NAME --help" in listed
    flag_count = sum(len(names) for names in sections.values())
    assert len(listed.splitlines()) < 2.5 * flag_count + 40
    full = ok(cli("train", "--helpfull"))
    assert "--lstm_units" in full and "--verbosity" in full and "(default: '300')" in full


@pytest.mark.parametrize("name", registry.names())
def test_help_shows_the_chosen_familys_flags_with_its_defaults(name):
    """`train --model=NAME --help` (or a named configuration of the family) lists the
    model flags every family has and the family's own, each with the family's default and
    its help, and none of another family's own."""
    from dsan_tf.models.config import ModelConfig

    config = registry.family(name).config
    shared = {f"--{field.name}" for field in ModelConfig.hyperparameters()}
    own = {f"--{field.name}" for field in config.hyperparameters()} - shared
    for chosen in ([f"--model={name}"] + [f"--config={named}" for named, (family, _)
                                          in registry.configs().items() if family == name][:1]):
        sections = _help_sections(ok(cli("train", chosen, "--help")))
        assert set(sections.get(f"model: {name}'s own", [])) == own, chosen
        assert shared <= set(sections["model"]), chosen
    listed = ok(cli("train", f"--model={name}", "--help"))
    defaults = config()
    for field in config.hyperparameters():
        value = getattr(defaults, field.name)
        if value is not None and not isinstance(value, bool):
            assert f"--{field.name} ({value})" in listed, field.name


@pytest.mark.parametrize("name", ["disan", "cbow"])
def test_visualize_draws_disan_and_says_cbow_has_nothing_to_draw(tmp_path, name):
    """A DiSAN run gets its attention, gate and pooling figures; a CBOW
    run gets one sentence naming the run and why (no traceback)."""
    from dsan_tf import build_model, model_config
    from dsan_tf.data import NLIPreprocessor, Vocabulary

    model = build_model(name, model_config(name, vocab_size=5, embedding_dim=8))
    model.preprocessor = NLIPreprocessor(Vocabulary(["a", "dog", "runs"]))
    run = tmp_path / "run"  # the figures go beside it: never inside a run
    run.mkdir()
    model.save(run / "best.keras")
    model.preprocessor.save(run)
    (run / "config.json").write_text(json.dumps({"model": name, "max_length": 256}))
    result = cli("visualize", f"--workdir={run}", f"--output_dir={tmp_path / 'figures'}",
                 "--sentence=a dog runs")
    if name == "disan":
        ok(result)
        written = sorted(p.name for p in (tmp_path / "figures").iterdir())
        assert written == ["fig07_attention.png", "fig09_fusion_gate.png",
                           "fig11_pooling.png"]
        assert all((tmp_path / "figures" / n).read_bytes().startswith(b"\x89PNG")
                   for n in written)
        return
    assert result.returncode != 0 and "Traceback" not in result.stderr
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith(f"error: --workdir={tmp_path / 'run'} is a cbow run: a CBOWBackbone "
                              "has no attention, fusion gate or pooling weights to draw")


ENSEMBLE_FRESH = """
import json, sys
import tensorflow as tf
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["serving_default"](premise=tf.constant(["the dog chased the cat"]),
                                          hypothesis=tf.constant(["the cat chased the dog"]))
print(json.dumps(out["probabilities"].numpy().tolist()))
"""


@pytest.fixture(scope="session")
def cbow_run(tmp_path_factory):
    """A second, different demo run: CBOW on lower-cased text (another vocabulary), made
    once per test run (`shared_once`)."""
    return shared_once(tmp_path_factory, "cbow", lambda workdir: ok(cli(
        "train", *DEMO, "--model=cbow", "--epochs=2", "--lowercase",
        f"--workdir={workdir}")))[0]


def test_ensemble_of_two_runs_evaluates_and_refuses_mixed_labels(demo, cbow_run, tmp_path):
    """The papers' ensembles average their members' probabilities; members of another
    model kind and vocabulary read the text with their own preprocessor."""
    import shutil

    workdir, _ = demo
    output = tmp_path / "ensemble.json"
    printed = ok(cli("ensemble", f"--workdir={workdir}", f"--workdir={cbow_run}",
                     "--data=synthetic:word_order/dev", f"--output={output}",
                     "--save_predictions"))
    assert "ensemble of 2" in printed
    source = json.loads(output.read_text())["sources"]["synthetic:word_order/dev"]
    assert set(source["members"]) == {str(workdir), str(cbow_run)}
    members = [report["accuracy"] for report in source["members"].values()]
    assert 0 <= source["ensemble"]["accuracy"] <= 1 and len(set(members)) == 2
    assert source["ensemble"]["examples"] == len(source["ensemble"]["predictions"]) == 168

    hans = write_hans(tmp_path / "heuristics_evaluation_set.txt")
    printed = ok(cli("ensemble", f"--workdir={workdir}", f"--workdir={cbow_run}",
                     f"--data={hans}", f"--output={output}", "--save_predictions"))
    assert "two-way: gold labels are entailment / non-entailment" in printed
    source = json.loads(output.read_text())["sources"][str(hans)]
    for report in (source["ensemble"], *source["members"].values()):
        assert set(report["per_gold_label"]) == {"entailment", "non-entailment"}
        assert set(report["predictions"]) <= {"0", "3"} and report["labels"] == "033"

    other = tmp_path / "relabelled"
    shutil.copytree(cbow_run, other)
    config = json.loads((other / "config.json").read_text())
    config["label_names"] = ["contradiction", "neutral", "entailment"]
    (other / "config.json").write_text(json.dumps(config))
    refused = cli("ensemble", f"--workdir={workdir}", f"--workdir={other}",
                  "--data=synthetic:word_order/dev")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "an ensemble averages probabilities of the same labels" in refused.stderr
    alone = cli("ensemble", f"--workdir={workdir}", "--data=synthetic:word_order/dev")
    assert "give at least two --workdir runs" in alone.stderr


@pytest.mark.slow
def test_ensemble_export_serves_the_mean_of_its_members(demo, cbow_run, tmp_path):
    """One SavedModel, raw strings in, no dsan_tf needed: the members' mean probabilities."""
    workdir, _ = demo
    export = tmp_path / "export"
    ok(cli("ensemble", f"--workdir={workdir}", f"--workdir={cbow_run}",
           f"--export_dir={export}", "--data=synthetic:word_order/dev"))
    export = export / "1"
    card = (export / "MODEL_CARD.md").read_text()
    assert "an ensemble of 2 runs" in card and "synthetic:word_order/dev: accuracy" in card
    assert card.count("- dev accuracy: ") == 2  # each member's card
    # Complete, as a run's export: each member's model and preprocessor, in --workdir order.
    for number, member in enumerate((workdir, cbow_run), 1):
        files = export / "members" / str(number)
        assert (files / "model.keras").read_bytes() == (member / "best.keras").read_bytes()
        for name in ("vocab.json", "preprocessor.json", "MODEL_CARD.md"):
            assert (files / name).read_text() == (member / name).read_text(), name

    def served(path):
        return json.loads(ok(subprocess.run(
            [sys.executable, "-c", ENSEMBLE_FRESH, str(path)], env=ENV, capture_output=True,
            text=True, timeout=300)).strip().splitlines()[-1])[0]

    singles = []
    for member in (workdir, cbow_run):
        ok(cli("export", f"--workdir={member}", f"--export_dir={tmp_path / member.name}"))
        singles.append(served(tmp_path / member.name / "1"))
    assert served(export) == pytest.approx(np.mean(singles, axis=0).tolist(), abs=1e-5)
    # The export read back as one Keras model of its members.
    import dsan_tf

    ensemble = dsan_tf.NLIEnsemble.from_preset(export)
    assert [type(m.backbone).__name__ for m in ensemble.members] == ["DSANBackbone",
                                                                     "CBOWBackbone"]
    assert ensemble.predict((["the dog chased the cat"], ["the cat chased the dog"]))[0] == \
        pytest.approx(served(export), abs=1e-5)
    # An ensemble has no sentence vectors, and says so (not "a pair model").
    with pytest.raises(ValueError, match=r"an ensemble averages its members' "
                                         r"probabilities and has no sentence vectors"):
        dsan_tf.load(str(export)).encode("the dog")
    assert dsan_tf.load(str(export / "members" / "1")).encode("the dog").shape == (1, 4 * 32)


def test_embed_writes_one_vector_per_line_and_a_projector_view(demo, tmp_path):
    """Row i is line i's sentence vector; the same vectors as the backbone gives in Python;
    a TensorBoard projector view of a sample; a blank line is refused, naming it (issue
    37: an empty sentence would be embedded from padding alone)."""
    import dsan_tf

    workdir, _ = demo
    text = tmp_path / "sentences.txt"
    lines = ["the dog saw the cat", "a cat", "a zebra"] * 100
    text.write_text("\n".join(lines) + "\n")
    output, projector = tmp_path / "vectors.npy", tmp_path / "projector"
    ok(cli("embed", f"--workdir={workdir}", f"--input={text}", f"--output={output}",
           f"--projector_dir={projector}", "--projector_sample=10"))
    vectors = np.load(output)
    assert vectors.shape == (300, 4 * 32) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors[:3], dsan_tf.load(str(workdir)).encode(lines[:3]),
                               atol=1e-5)
    np.testing.assert_allclose(vectors[0], vectors[3], atol=1e-6)
    assert len((projector / "metadata.tsv").read_text().splitlines()) == 10
    assert (projector / "projector_config.pbtxt").exists()
    blank = tmp_path / "blank.txt"
    blank.write_text("a dog\n\na cat\n")
    refused = cli("embed", f"--workdir={workdir}", f"--input={blank}", f"--output={output}")
    assert refused.stderr.strip().splitlines()[-1] == (
        f"error: {blank}:2: the sentence is empty; a sentence needs at least one word (the "
        "output has a vector per line).")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sentence1": "a dog"}\n{"premise": "a cat"}\n')
    refused = cli("embed", f"--workdir={workdir}", f"--input={bad}", f"--output={output}")
    assert f"{bad}:2: expected a JSON object with the field 'sentence1'" in refused.stderr
    assert "Traceback" not in refused.stderr


HANS_HEADER = ("gold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
               "sentence2_parse\tsentence1\tsentence2\tpairID\theuristic\tsubcase\ttemplate")


def write_hans(path):
    """Three pairs in HANS's TSV format: two-way gold labels, heuristic and subcase."""
    rows = [("entailment", "the dog saw the cat", "the dog saw the cat", "lexical_overlap",
             "ln_subject/object_swap"),
            ("non-entailment", "the dog saw the cat", "the cat saw the dog", "lexical_overlap",
             "ln_subject/object_swap"),
            ("non-entailment", "the boy saw the girl", "the girl saw the boy", "subsequence",
             "sn_NP/S")]
    path.write_text(HANS_HEADER + "\n" + "".join(
        f"{gold}\t( x )\t( y )\t(S x)\t(S y)\t{p}\t{h}\tex{i}\t{heuristic}\t{subcase}\ttemp1\n"
        for i, (gold, p, h, heuristic, subcase) in enumerate(rows)))
    return path


def test_evaluate_scores_two_way_sets_and_groups_by_any_field(demo, tmp_path):
    """HANS (two-way gold, heuristic and subcase fields), Breaking NLI (category) and
    MultiNLI (genre): per-group accuracy, in the JSON and printed; mistakes get a sentence."""
    workdir, _ = demo
    hans = write_hans(tmp_path / "heuristics_evaluation_set.txt")
    output = tmp_path / "hans.json"
    printed = ok(cli("evaluate", f"--workdir={workdir}", f"--data={hans}",
                     "--group_by=heuristic", "--group_by=subcase", f"--output={output}"))
    result = json.loads(output.read_text())["sources"][str(hans)]
    assert "neutral or contradiction count as non-entailment" in result["two_way"]
    assert result["examples"] == 3 and set(result["per_gold_label"]) == {
        "entailment", "non-entailment"}
    groups = result["groups"]["heuristic"]
    assert {k: v["examples"] for k, v in groups.items()} == {"lexical_overlap": 2,
                                                             "subsequence": 1}
    assert set(result["groups"]["subcase"]) == {"ln_subject/object_swap", "sn_NP/S"}
    assert "by heuristic:" in printed and "two-way" in printed

    breaking = tmp_path / "breaking.jsonl"
    breaking.write_text("".join(json.dumps({"sentence1": "the dog saw the cat",
                                            "sentence2": h, "gold_label": g, "category": c})
                                + "\n" for h, g, c in (
        ("the cat saw the dog", "contradiction", "antonyms"),
        ("the dog saw the cat", "entailment", "synonyms"),
        ("the dog saw a cat", "entailment", "synonyms"),
        # One pair under its three labels, a group each: the model predicts one label for
        # all three, so exactly one of these groups is right, whatever the model.
        ("a dog saw a cat", "entailment", "same_pair_e"),
        ("a dog saw a cat", "neutral", "same_pair_n"),
        ("a dog saw a cat", "contradiction", "same_pair_c"))))
    output = tmp_path / "breaking.json"
    ok(cli("evaluate", f"--workdir={workdir}", f"--data={breaking}", "--group_by=category",
           "--save_predictions", f"--output={output}"))
    result = json.loads(output.read_text())["sources"][str(breaking)]
    assert result["groups"]["category"]["synonyms"]["examples"] == 2
    # Each group's accuracy is its own records' (file order: the saved predictions).
    correct = [p == g for p, g in zip(result["predictions"], result["labels"])]
    categories = ["antonyms", "synonyms", "synonyms", "same_pair_e", "same_pair_n",
                  "same_pair_c"]
    for category, group in result["groups"]["category"].items():
        mine = [c for c, name in zip(correct, categories) if name == category]
        assert group == {"examples": len(mine), "accuracy": sum(mine) / len(mine)}, category
    assert sorted(result["groups"]["category"][f"same_pair_{x}"]["accuracy"]
                  for x in "enc") == [0.0, 0.0, 1.0]
    assert "per_class" in result  # three-way data keeps the full report

    unknown = cli("evaluate", f"--workdir={workdir}", f"--data={breaking}", "--group_by=genre")
    assert unknown.returncode != 0 and "Traceback" not in unknown.stderr
    assert f"--group_by=genre: no example of {breaking} has a field 'genre'" in unknown.stderr
    refused = cli("train", *DEMO, f"--train_data={hans}", f"--workdir={tmp_path / 'run'}")
    assert "has two-way labels (non-entailment, as HANS)" in refused.stderr


# What a user sees: each test states the property a user relies on.

def scalars(logdir):
    """{tag: [(step, value)]} of the scalar summaries in one TensorBoard run folder."""
    from tensorboard.backend.event_processing import event_accumulator

    events = event_accumulator.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    events.Reload()
    import tensorflow as tf

    return {tag: [(e.step, float(tf.make_ndarray(e.tensor_proto))) for e in events.Tensors(tag)]
            for tag in events.Tags()["tensors"]}


def test_tensorboard_holds_the_learning_curves(demo):
    """The event files hold one loss, accuracy and learning rate per epoch for training and
    one loss and accuracy per epoch for validation, equal to history.csv, although the
    demo's 84 steps are no multiple of --log_every_steps=100."""
    workdir, _ = demo
    rows = history(workdir)
    train, dev = scalars(workdir / "tensorboard/train"), scalars(workdir / "tensorboard/validation")
    for tag, column in (("epoch_loss", "loss"), ("epoch_accuracy", "accuracy")):
        assert [step for step, _ in train[tag]] == [0, 1, 2, 3]
        assert [v for _, v in train[tag]] == pytest.approx([float(r[column]) for r in rows],
                                                           rel=1e-5)
        assert [v for _, v in dev[tag]] == pytest.approx(
            [float(r[f"val_{column}"]) for r in rows], rel=1e-5)
    assert [v for _, v in train["epoch_learning_rate"]] == pytest.approx([3e-3] * 4)
    # history.csv also holds the learning rate and the steps so far (the study plots
    # against them); TensorBoard gets neither twice.
    assert [float(r["learning_rate"]) for r in rows] == pytest.approx([3e-3] * 4)
    assert [int(r["steps"]) for r in rows] == [21, 42, 63, 84]
    assert "epoch_steps" not in train and len(train["epoch_learning_rate"]) == 4
    # The probe sentence's figures share the curves' epoch axis (from 0, as Keras writes it;
    # they were one epoch ahead).
    from tensorboard.backend.event_processing import event_accumulator

    probe = event_accumulator.EventAccumulator(str(workdir / "tensorboard/probe"),
                                               size_guidance={"tensors": 0})
    probe.Reload()
    figures = probe.Tags()["tensors"]
    assert figures and all([event.step for event in probe.Tensors(tag)] == [0, 1, 2, 3]
                           for tag in figures), figures


def test_a_run_directory_never_describes_another_model(demo, tmp_path):
    """Re-running a finished run with other flags is refused with one sentence naming them,
    and changes no byte of it; the same flags report the finished result without training;
    --overwrite trains afresh and its records say so."""
    import shutil

    workdir, output = demo
    copy = tmp_path / "run"
    shutil.copytree(workdir, copy)
    names = ("flags.txt", "config.json", "MODEL_CARD.md", "best.keras", "results.json",
             "history.csv")
    before = {name: (copy / name).read_bytes() for name in names}
    flags = [*DEMO, f"--workdir={copy}", "--epochs=4", "--probe_sentence=the dog saw the cat"]
    refused = cli("train", *flags, "--dropout=0.3", "--batch_size=16")
    assert refused.returncode != 0 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith(
        f"error: --workdir {copy} holds a run of another configuration (--dropout: 0.0 "
        "there, 0.3 now; --batch_size: 32 there, 16 now)")
    assert "--overwrite" in refused.stderr
    assert {name: (copy / name).read_bytes() for name in names} == before
    # Another family: one line naming the model, not each hyperparameter the two do not
    # share (863 characters of them).
    other = cli("train", *flags, "--model=disan")
    error = other.stderr.strip().splitlines()[-1]  # after the note on the DSAN-only flags
    assert other.returncode != 0 and error.startswith(f"error: --workdir {copy} holds a run "
                                                      "of another configuration (--model: "
                                                      "dsan there, disan now); ")
    assert len(error) < 250 and "--num_heads" not in error
    assert {name: (copy / name).read_bytes() for name in names} == before
    again = ok(cli("train", *flags))
    assert "nothing trained" in again and "Epoch" not in again
    assert again.strip().splitlines()[-1] == output.strip().splitlines()[-1].replace(
        str(workdir), str(copy))
    assert {name: (copy / name).read_bytes() for name in names} == before
    # With --export_dir: the export already holds this model, and nothing new is written
    # (each no-op re-run wrote export/2, export/3... of one model).
    exported = ok(cli("train", *flags, f"--export_dir={copy / 'export'}"))
    assert f"already exported: {copy / 'export' / '1'} holds this run's model" in exported
    assert sorted(p.name for p in (copy / "export").iterdir()) == ["1"]
    ok(cli("train", *flags, "--dropout=0.3", "--epochs=1", "--steps_per_epoch=2",
           "--overwrite"))
    assert "--dropout=0.3" in (copy / "flags.txt").read_text()
    assert json.loads((copy / "config.json").read_text())["model_config"]["dropout"] == 0.3
    assert [int(r["epoch"]) for r in history(copy)] == [1]


def test_a_failed_run_leaves_no_directory(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sentence1": "a"\n')
    failed = cli("train", *DEMO, f"--workdir={tmp_path / 'run'}", f"--train_data={bad}")
    assert failed.returncode != 0 and f"{bad}:1: malformed JSON" in failed.stderr
    # json's message whole, with where (it ended "starting at).")
    assert "(Expecting ',' delimiter: column 18)." in failed.stderr
    assert not (tmp_path / "run").exists()


def _without_frameworks(folder):
    """A child's environment in which importing TensorFlow or Keras fails loudly: packages
    of those names in `folder`, first on its path."""
    for name in ("tensorflow", "keras"):
        (folder / name).mkdir()
        (folder / name / "__init__.py").write_text(
            f"raise ImportError('{name} was imported before the flags were checked')")
    return {"PYTHONPATH": str(folder)}


@pytest.mark.parametrize("program,flags", [
    ("train", [*DEMO, "--workdir=/tmp/x", "--batch_size=0"]),
    ("evaluate", ["--workdir=.", "--data=synthetic:word_order/dev", "--batch_size=0"]),
    ("ensemble", ["--workdir=.", "--workdir=.", "--data=synthetic:word_order/dev",
                  "--batch_size=0"]),
    ("visualize", ["--workdir=.", "--output_dir=/tmp/x", "--batch_size=0"]),
    ("predict", ["--workdir=/no/such/run", "--premise=a", "--hypothesis=b"]),
    ("embed", ["--workdir=.", "--input=/no/such.txt", "--output=/tmp/x.npy"]),
])
def test_bad_flag_values_are_refused_before_tensorflow_loads(program, flags, tmp_path):
    """A new process in which importing TensorFlow (or Keras) fails loudly: the refusal
    comes first, so the sentence is all the user sees, however busy the machine."""
    refused = cli_process(program, *flags, env=_without_frameworks(tmp_path))
    assert refused.returncode != 0 and refused.stdout == "", refused.stderr[-2000:]
    assert refused.stderr.startswith("error: flag --") and refused.stderr.count("\n") == 1


@pytest.mark.parametrize("program,flags,said", [
    ("train", ["--config=demo"], "give --workdir, the run directory."),
    ("evaluate", ["--data=synthetic:word_order/dev"],
     "give --workdir, a finished run, an export or a trained preset's name."),
    ("evaluate", ["--workdir=."], "give --data, the data to evaluate on"),
    ("predict", ["--workdir=.", "--premise=a"], "give both --premise and --hypothesis."),
    ("predict", ["--premise=a", "--hypothesis=b"], "give --workdir, a finished run"),
    ("export", ["--export_dir=/tmp/x"], "give --workdir, a dsan-train run directory."),
    ("visualize", ["--output_dir=/tmp/x"], "give --workdir, a dsan-train run directory."),
    ("embed", ["--workdir=.", "--output=/tmp/x.npy"], "give --input, the sentences to embed."),
    ("ensemble", ["--workdir=.", "--data=synthetic:word_order/dev"],
     "give at least two --workdir runs to ensemble."),
])
def test_a_missing_flag_is_one_sentence_before_tensorflow_loads(program, flags, said,
                                                                tmp_path):
    """A required flag left out is said in one sentence, before TensorFlow or Keras loads
    (importing either fails loudly in this child; --workdir left out of evaluate was a
    TypeError traceback after TensorFlow's start-up)."""
    refused = cli_process(program, *flags, env=_without_frameworks(tmp_path))
    assert refused.returncode == 1 and refused.stdout == "", refused.stderr[-2000:]
    assert refused.stderr.startswith(f"error: {said}") and refused.stderr.count("\n") == 1, \
        refused.stderr[-2000:]


def test_a_missing_value_of_a_list_flag_is_named_alone(tmp_path):
    """The missing file of a repeated flag is named as the flag's value,
    not inside absl's Python list (`--data=['...', '...']`)."""
    there = tmp_path / "dev.jsonl"
    there.write_text("")
    refused = cli("evaluate", f"--workdir={tmp_path}", f"--data={there}",
                  f"--data={tmp_path / 'missing.jsonl'}")
    assert refused.returncode != 0 and refused.stderr == (
        f"error: flag --data={tmp_path / 'missing.jsonl'}: no such file.\n")


def test_without_internet_tfds_says_so_at_once_and_leaves_nothing(tmp_path):
    """The README's TFDS command offline (simulated by a proxy on a closed loopback port):
    one sentence that names the local-file alternative, no retries (the child's timeout
    guards a hang); nothing in HOME."""
    home = tmp_path / "home"
    home.mkdir()
    proxy = "http://127.0.0.1:9"
    # A new process: TFDS reads HOME when it is imported.
    refused = cli_process("train", *DEMO, f"--workdir={tmp_path / 'run'}",
                          "--train_data=tfds:snli/train", timeout=120,
                  env={"HOME": str(home), "HTTPS_PROXY": proxy, "HTTP_PROXY": proxy,
                       "https_proxy": proxy, "http_proxy": proxy, "NO_PROXY": "",
                       "no_proxy": "", "TFDS_DATA_DIR": ""})
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert refused.stderr.splitlines() == [refused.stderr.strip()]
    assert "needs internet" in refused.stderr and "give the local file where tfds:" in refused.stderr
    assert not (home / "tensorflow_datasets").exists() and not (tmp_path / "run").exists()


def test_programs_print_no_tensorflow_log_lines(demo):
    """No C++ log line (oneDNN, CUDA probing, CPU features) unless --verbosity asks."""
    import re

    workdir, _ = demo
    env = {k: v for k, v in ENV.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run(command("evaluate", f"--workdir={workdir}",
                                    "--data=synthetic:word_order/dev"),
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    ok(result)
    assert not re.search(r"^[IWEF]\d{4} |absl::InitializeLog|cuInit|oneDNN",
                         result.stderr + result.stdout, re.M), result.stderr
    assert "softmax over axis" not in result.stderr


def test_long_steps_report_progress_in_a_log_file(demo, tmp_path):
    """Output redirected (no terminal): training, the dev pass, evaluate and predict print
    done/total lines with a rate (DSAN_PROGRESS_SECONDS=0: every batch)."""
    workdir, _ = demo
    fast = {"DSAN_PROGRESS_SECONDS": "0"}
    trained = cli("train", *DEMO, f"--workdir={tmp_path / 'run'}", "--epochs=1", "--model=cbow",
                  env=fast)  # the progress lines are the program's, whatever the family
    ok(trained)
    assert "epoch 1/1, training: 21/21 steps (100%)" in trained.stderr
    assert "epoch 1/1, training: 1/21 steps (5%)" in trained.stderr and "ETA" in trained.stderr
    assert "epoch 1/1, dev: 6/6 batches (100%)" in trained.stderr
    evaluated = cli("evaluate", f"--workdir={workdir}", "--data=synthetic:word_order/dev",
                    env=fast)
    assert "evaluate synthetic:word_order/dev: 168/168 pairs (100%)" in ok(evaluated) + \
        evaluated.stderr
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"sentence1": "the dog", "sentence2": "the cat"}) + "\n")
    predicted = cli("predict", f"--workdir={workdir}", f"--input={pairs}", env=fast)
    ok(predicted)
    assert "predict: 1/1 pairs (100%)" in predicted.stderr


def test_truncation_is_reported_per_pair_and_once_in_all(demo, tmp_path):
    """A 5,000-word premise: predict's JSON line says how many tokens were cut and one
    warning line sums it up; the exported SavedModel says so too."""
    workdir, _ = demo
    pairs = tmp_path / "pairs.jsonl"
    long = " ".join(["the dog saw the cat"] * 1000)
    pairs.write_text(json.dumps({"sentence1": long, "sentence2": "the cat saw the dog"}) + "\n"
                     + json.dumps({"sentence1": "the dog", "sentence2": "the cat"}) + "\n")
    result = cli("predict", f"--workdir={workdir}", f"--input={pairs}")
    lines = [json.loads(line) for line in ok(result).splitlines() if line.startswith("{")]
    assert [line["truncated"] for line in lines] == [{"premise": 5000 - 256, "hypothesis": 0},
                                                     {"premise": 0, "hypothesis": 0}]
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: the model read only the first 256 tokens of 1 premise(s) and "
                        "0 hypothesis(es) of the 2 pairs; each line's truncated says how many."]
    import tensorflow as tf

    served = tf.saved_model.load(str(workdir / "export" / "1")).signatures["serving_default"]
    out = served(premise=tf.constant([long]), hypothesis=tf.constant(["the cat"]))
    assert out["premise_truncated"].numpy().tolist() == [4744]


def test_a_failed_predict_leaves_no_submission_file(demo, tmp_path):
    """Malformed, empty and non-UTF-8 input: no CSV that looks like an empty submission, and
    an older output file is kept as it was."""
    workdir, _ = demo
    inputs = {"malformed.jsonl": b'{"sentence1": "a"}\n', "empty.jsonl": b"\n",
              "latin1.jsonl": '{"sentence1": "caf\u00e9", "sentence2": "b"}\n'.encode("latin-1")}
    kept = tmp_path / "kept.csv"
    kept.write_text("pairID,gold_label\n1,entailment\n")
    for name, data in inputs.items():
        (tmp_path / name).write_bytes(data)
        for output in (tmp_path / f"{name}.csv", kept):
            refused = cli("predict", f"--workdir={workdir}", f"--input={tmp_path / name}",
                          "--format=csv", f"--output={output}")
            assert refused.returncode != 0 and "Traceback" not in refused.stderr, name
            assert not (tmp_path / f"{name}.csv").exists(), name
    assert kept.read_text() == "pairID,gold_label\n1,entailment\n"
    assert list(tmp_path.glob("*.partial")) == []


def test_predict_and_embed_read_an_export(demo, tmp_path):
    workdir, _ = demo
    export = workdir / "export"
    predicted = ok(cli("predict", f"--workdir={export}", "--premise=the dog saw the cat",
                       "--hypothesis=the cat saw the dog"))
    assert json.loads(predicted.strip().splitlines()[-1])["label"] in (
        "entailment", "neutral", "contradiction")
    sentences = tmp_path / "s.txt"
    sentences.write_text("the dog\n")
    ok(cli("embed", f"--workdir={export}", f"--input={sentences}",
           f"--output={tmp_path / 'v.npy'}"))
    assert np.load(tmp_path / "v.npy").shape == (1, 4 * 32)


def test_group_by_names_the_fields_a_source_has(demo, tmp_path):
    workdir, _ = demo
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"sentence1": "the dog", "sentence2": "the cat",
                                "gold_label": "neutral", "pairID": "7"}) + "\n")
    refused = cli("evaluate", f"--workdir={workdir}", f"--data={data}", "--group_by=genre")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "the two sentences and the gold label" in refused.stderr
    assert refused.stderr.strip().endswith("are: pairID.")


@pytest.mark.slow
def test_the_readme_demo_ends_as_the_readme_says(tmp_path):
    """The README's first command, whole: its last line is the one the README quotes."""
    readme = (ROOT / "README.md").read_text()
    quoted = " ".join(readme.split("ends with `", 1)[1].split("`", 1)[0].split())
    output = ok(cli("train", *DEMO, f"--workdir={tmp_path}",
                    f"--export_dir={tmp_path / 'export'}"))
    import re

    last = output.strip().splitlines()[-1]
    expected = quoted.replace("/tmp/dsan_demo/", f"{tmp_path}/")
    epoch = lambda line: int(re.search(r"best epoch (\d+)", line).group(1))  # noqa: E731
    # The README's epoch was measured on one CPU; another reaches 1.0 an epoch sooner or
    # later, in its own time.
    varies = lambda line: re.sub(r"best epoch \d+|\d+:\d\d:\d\d", "", line)  # noqa: E731
    assert varies(last) == varies(expected)
    assert abs(epoch(last) - epoch(expected)) <= 1


def test_encode_setting_takes_its_data_from_a_named_configuration(tmp_path):
    """`dsan-encode-setting --config=NAME` reads the configuration's data flags (it asked
    for --train_data before reading them); without any, one sentence names the flag."""
    missing = cli("encode_setting", f"--output={tmp_path / 'x.npz'}")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert missing.stderr.strip().splitlines()[-1] == (
        "error: give --train_data, the training data.")
    done = ok(cli("encode_setting", "--config=demo", f"--output={tmp_path / 'demo.npz'}"))
    assert done.strip().splitlines()[-1].startswith(f"encoded setting: {tmp_path / 'demo.npz'}")


def test_visualize_reads_a_run_says_when_it_is_unfinished_and_leaves_no_empty_folder(
        demo, tmp_path):
    """dsan-visualize reads a run's own record: its --help says so, a preset's name or an
    export is one sentence and leaves no empty --output_dir behind; a run stopped before its
    end is drawn from its best model so far, and the program says so as predict does."""
    import shutil

    workdir, _ = demo
    assert "an export or a trained preset holds no run record" in " ".join(
        cli_process("visualize", "--help").stdout.split())
    figures = tmp_path / "figures"
    refused = cli("visualize", f"--workdir={workdir / 'export'}", f"--output_dir={figures}")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert not figures.exists()
    stopped = tmp_path / "stopped"
    shutil.copytree(workdir, stopped, ignore=shutil.ignore_patterns("export"))
    (stopped / "results.json").unlink()
    drawn = cli("visualize", f"--workdir={stopped}", f"--output_dir={figures}")
    assert drawn.returncode == 0, drawn.stderr[-2000:]
    assert f"note: {stopped} stopped before its end (it has no results.json); this is its " \
        "best model so far." in drawn.stderr
    assert sorted(path.name for path in figures.iterdir())[:1] == ["fig07_attention.png"]


@pytest.mark.slow
@pytest.mark.parametrize("save_predictions", [False, True])
@pytest.mark.parametrize("group_by", [False, True])
def test_evaluate_outputs_line_up_with_the_file_whatever_order_batches_take(
        tmp_path, save_predictions, group_by):
    """dsan-evaluate of the shipped model on 300 SNLI dev pairs of varied lengths (its
    batches group pairs by length, not in file order), under each combination of the flags
    that decide that order (--save_predictions, --group_by): the accuracy, each class's
    scores, the accuracy by length, the truncation counts, each group's accuracy and the
    saved predictions are those of the model's own predictions pair by pair, in file order."""
    import gzip

    import dsan_tf
    from dsan_tf.evaluation import metrics

    source = ROOT / "../shared/data/snli/snli_1.0_dev.jsonl.gz"
    if not source.exists():
        pytest.skip(f"{source} is not here (../shared/data beside the clone)")
    records = []
    with gzip.open(source, "rt", encoding="utf-8") as stream:
        for line in stream:
            record = json.loads(line)
            if record["gold_label"] != "-":
                records.append({"sentence1": record["sentence1"],
                                "sentence2": record["sentence2"],
                                "gold_label": record["gold_label"],
                                "shard": f"s{len(records) % 4}"})
            if len(records) == 300:
                break
    data = tmp_path / "dev300.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    model = dsan_tf.load("dsan_snli25k_glove50")
    premises = [r["sentence1"] for r in records]
    hypotheses = [r["sentence2"] for r in records]
    predicted = np.argmax(model.predict((premises, hypotheses)), axis=-1)
    gold = np.array([dsan_tf.LABELS.index(r["gold_label"]) for r in records])
    length = lambda text: min(len(model.preprocessor.tokens(text)),  # noqa: E731
                              model.max_length)
    assert len({length(p) for p in premises}) > 10  # lengths vary: batches reorder
    expected = metrics.classification_report(gold, predicted, [length(p) for p in premises],
                                             [length(h) for h in hypotheses])
    flags = [*(["--save_predictions"] if save_predictions else []),
             *(["--group_by=shard"] if group_by else [])]
    output = tmp_path / "report.json"
    ok(cli("evaluate", "--workdir=dsan_snli25k_glove50", f"--data={data}",
           f"--output={output}", *flags))
    result = json.loads(output.read_text())["sources"][str(data)]
    for key in ("accuracy", "per_class", "confusion_matrix", "accuracy_by_length"):
        assert json.dumps(result[key]) == json.dumps(expected[key]), key
    assert result["tokens"]["truncated_premises"] == sum(
        len(model.preprocessor.tokens(p)) > model.max_length for p in premises)
    if save_predictions:
        assert result["predictions"] == "".join(map(str, predicted.tolist()))
        assert result["labels"] == "".join(map(str, gold.tolist()))
    if group_by:
        for shard in range(4):
            chosen = np.arange(len(records)) % 4 == shard
            assert result["groups"]["shard"][f"s{shard}"] == pytest.approx(
                {"examples": int(chosen.sum()),
                 "accuracy": float(np.mean(predicted[chosen] == gold[chosen]))})
