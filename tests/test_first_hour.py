"""What a new user meets in the first hour, checked as the user sees it: the
message and exit status, the numbers printed, the rows of history.csv."""

import io
import json
import re
import subprocess
import sys

import pytest

import dsan_tf
from dsan_tf.common import progress
from dsan_tf.core.rundir import read_history
from helpers import ENV, ROOT, cli, ok


def test_messages_keep_the_paths_the_user_gave(tmp_path):
    """A path with ../ (the README's own ../shared/...) is reported as given, not as ./."""
    done = cli("evaluate", f"--workdir={tmp_path}", "--data=../nowhere/dev.jsonl")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "error: flag --data=../nowhere/dev.jsonl: no such file." in done.stderr
    assert "'./nowhere" not in done.stderr


def test_an_unknown_flag_is_one_sentence_with_its_suggestion():
    done = cli("train", "--epoch=3")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "error: Unknown command line flag 'epoch'. Did you mean: epochs?")


BACKEND_MISSING = """
import sys
sys.modules["jax"] = None  # as where JAX is not installed
sys.argv[0] = "summary"
from dsan_tf.programs.summary import cli
cli()
"""


def test_a_backend_that_is_not_installed_is_one_sentence():
    done = subprocess.run([sys.executable, "-c", BACKEND_MISSING], cwd=ROOT,
                          env=dict(ENV, KERAS_BACKEND="jax"), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(
        "error: KERAS_BACKEND=jax needs jax installed (pip install -r requirements-jax.txt)")


def test_the_eta_counts_from_after_the_first_step(monkeypatch):
    """A first step of 10 s (tracing, buffers) then 1 s a step: after 5 of 100 steps the
    ETA is 95 s, not the 266 s that the average with the first step would give."""
    now = [0.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: now[0])
    monkeypatch.setenv("DSAN_PROGRESS_SECONDS", "0")
    stream = io.StringIO()
    shown = progress.Progress("epoch 1/3, training", 100, "steps", stream=stream)
    for seconds in (10, 1, 1, 1, 1):
        now[0] += seconds
        shown.update()
    last = stream.getvalue().splitlines()[-1]
    assert last == "epoch 1/3, training: 5/100 steps (5%), 1.0 steps/s, ETA 0:01:35"
    now[0] += 1
    shown.close()
    assert stream.getvalue().splitlines()[-1] == (
        "epoch 1/3, training: 5/100 steps (5%), 0.3 steps/s, took 0:00:15")  # all of it


def test_history_counts_epochs_from_one_also_in_older_files(tmp_path):
    """history.csv is written from epoch 1 (test_cli checks a run's); a file of an older run,
    counted from 0, reads the same."""
    older = tmp_path / "history.csv"
    older.write_text("epoch,accuracy,steps\n0,0.5,10\n1,0.6,20\n")
    assert [row["epoch"] for row in read_history(older)] == [1, 2]
    newer = tmp_path / "new.csv"
    newer.write_text("epoch,accuracy,steps\n1,0.5,10\n2,0.6,20\n")
    assert [row["epoch"] for row in read_history(newer)] == [1, 2]


@pytest.mark.parametrize("text, expected", [
    ("flag --x: no such file", "flag --x: no such file."),
    ("ends well.", "ends well."),
    ("Did you mean: epochs ?", "Did you mean: epochs?"),
    ("--train_data=../shared/a.jsonl is bad", "--train_data=../shared/a.jsonl is bad."),
    ("ERROR:: Unable to open flagfile: x", "Unable to open flagfile: x."),
])
def test_a_message_becomes_one_sentence_and_nothing_else_changes(text, expected):
    from dsan_tf.programs.program import sentence
    assert sentence(text) == expected


def event_steps(folder, tag):
    """Every (step) of scalar `tag` in every event file of a TensorBoard run folder, file
    by file in the order they were written (a resumed run adds a file)."""
    import tensorflow as tf

    steps = []
    for path in sorted(folder.glob("events.out.tfevents.*"), key=lambda p: p.stat().st_mtime):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            steps += [event.step for value in event.summary.value if value.tag == tag]
    return steps


def test_ctrl_c_exits_130_naming_the_command_that_resumes_and_steps_go_on(tmp_path):
    """Ctrl-C during training: exit status 130, one line naming the command that resumes
    (no traceback). That command says from which epoch it resumes, and TensorBoard's batch
    steps go on from where they were instead of starting again at 0."""
    import os
    import signal
    import time

    workdir = tmp_path / "run"
    args = [sys.executable, "-m", "dsan_tf.programs.train",
            "--config=demo", f"--workdir={workdir}",
            "--epochs=6", "--log_every_steps=5"]
    process = subprocess.Popen(  # as a terminal's Ctrl-C reaches it: SIGINT not ignored
        args, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 240
    while time.time() < deadline and process.poll() is None:
        if len(read_history(workdir / "history.csv")) >= 2:
            break
        time.sleep(0.05)
    assert process.poll() is None, "training ended before it could be interrupted"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130 and "Traceback" not in stderr
    done = len(read_history(workdir / "history.csv"))
    command = "python -m dsan_tf.programs.train " + " ".join(args[3:])
    assert stderr.strip().splitlines()[-1] == (
        f"interrupted: {done} epoch(s) of {workdir} are kept; `{command}` resumes from "
        f"epoch {done + 1}.")
    resumed = cli("train", *args[3:])  # in this process: the signal was the child's part
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert (f"resuming {workdir}: {done} epoch(s) done, training from epoch {done + 1}"
            in resumed.stdout)
    assert [row["epoch"] for row in read_history(workdir / "history.csv")] == \
        list(range(1, 7))
    steps = event_steps(workdir / "tensorboard" / "train", "batch_loss")
    # Every 5th of the 6 x 21 steps, once each (a restart at 0 would repeat 5, 10, ...).
    assert steps == list(range(5, 6 * 21 + 1, 5))
    assert os.path.exists(workdir / "results.json")
    # train.log keeps both starts: the interrupted one to its last epoch, the resumed one to
    # the line it ended with (no terminal redraws in it).
    log = (workdir / "train.log").read_text()
    first, second = log.split("== started ")[1:]
    assert f"epoch {done}/6: accuracy" in first and first.endswith("== interrupted (Ctrl-C)\n")
    assert f"resuming {workdir}: {done} epoch(s) done" in second
    assert second.rstrip("\n").splitlines()[-1] == resumed.stdout.strip().splitlines()[-1]
    assert "\r" not in log


def test_ctrl_c_that_lands_in_a_finalizer_still_stops_the_run(tmp_path, monkeypatch):
    """SIGINT raises KeyboardInterrupt in whatever Python code runs when it arrives; in a
    finalizer (TensorFlow and Keras run many `__del__` while training) Python prints
    "Exception ignored" and goes on, and the run trained to its end with status 0. It stops
    at the end of that batch instead: status 130, the resuming command, no traceback."""
    from dsan_tf.training import callbacks

    shown = callbacks.TrainingProgress.on_train_batch_end

    class Finalizer:
        def __del__(self):
            raise KeyboardInterrupt  # what SIGINT does in the frame it lands in

    def on_train_batch_end(self, batch, logs=None):
        shown(self, batch, logs)
        if self.epoch == 2 and batch == 2:
            Finalizer()  # dropped at once: its __del__ runs here

    monkeypatch.setattr(callbacks.TrainingProgress, "on_train_batch_end", on_train_batch_end)
    workdir = tmp_path / "run"
    done = cli("train", "--config=demo", f"--workdir={workdir}", "--epochs=3")
    assert done.returncode == 130, done.stdout[-2000:]
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert [row["epoch"] for row in read_history(workdir / "history.csv")] == [1]
    assert re.fullmatch(rf"interrupted: 1 epoch\(s\) of {workdir} are kept; `.+` resumes "
                        r"from epoch 2\.", done.stderr.strip().splitlines()[-1])


def test_ctrl_c_while_tensorflow_traces_an_export_ends_as_interrupted(trained, tmp_path,
                                                                       monkeypatch):
    """Ctrl-C while the SavedModel's signature is traced: TensorFlow's clean-up raises
    another error over the KeyboardInterrupt (a `SystemError` from its list of control
    dependencies, seen in a 60-line traceback with status 1). The program ends as any
    Ctrl-C does: "interrupted." and 130, no traceback, no export left."""
    from dsan_tf.saving import serving

    def traced(*args):
        try:
            raise KeyboardInterrupt  # SIGINT, landing in the traced Python code
        except KeyboardInterrupt:
            raise SystemError("Objects/listobject.c:338: bad argument to internal "
                              "function") from None  # noqa: B904 - as TensorFlow's exit

    monkeypatch.setattr(serving, "_serving_outputs", traced)
    done = cli("export", f"--workdir={trained}", f"--export_dir={tmp_path / 'export'}")
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1] == "interrupted."
    assert not list((tmp_path / "export").glob("*/saved_model.pb"))


@pytest.fixture
def trained(demo):
    """A finished demo run (tests/conftest.py's, shared): what predict reads."""
    return demo[0]


@pytest.mark.parametrize("name, text", [
    ("pairs.csv", 'pairID,premise,hypothesis\nq1,"the dog, the café",the cat\nq2,a b,c d\n'),
    ("pairs.tsv", "sentence1\tsentence2\nthe dog, the café\tthe cat\na b\tc d\n"),
    # A spreadsheet's "CSV UTF-8": a byte-order mark before the header.
    ("excel.csv", '\ufeffpremise,hypothesis\n"the dog, the café",the cat\na b,c d\n'),
    ("pairs.jsonl", '{"premise": "the dog, the café", "hypothesis": "the cat"}\n'
                    '{"sentence1": "a b", "sentence2": "c d"}\n'),
])
def test_predict_reads_csv_tsv_and_jsonl_and_writes_text_as_it_is(trained, tmp_path, name,
                                                                   text):
    """The same two pairs from each format give the same labels; non-ASCII text is written
    as UTF-8 (café), not escaped; pairIDs are kept, else the pair's position (from 1, in
    every format: a user joins labels back by it)."""
    import json

    source = tmp_path / name
    source.write_text(text, encoding="utf-8")
    output = tmp_path / "out.jsonl"
    done = cli("predict", f"--workdir={trained}", f"--input={source}", f"--output={output}")
    assert done.returncode == 0, done.stderr[-3000:]
    raw = output.read_text(encoding="utf-8")
    assert '"premise": "the dog, the café"' in raw and "\\u00e9" not in raw
    rows = [json.loads(line) for line in raw.splitlines()]
    expected_ids = {"pairs.csv": ["q1", "q2"], "pairs.tsv": ["1", "2"],
                    "excel.csv": ["1", "2"], "pairs.jsonl": ["1", "2"]}[name]
    assert [row["pairID"] for row in rows] == expected_ids
    assert [row["hypothesis"] for row in rows] == ["the cat", "c d"]


@pytest.mark.parametrize("name, text, message", [
    ("bad.csv", "id,text_a,text_b\n1,a,b\n", "bad.csv:1: the header must name the columns "
     "premise,hypothesis (or sentence1,sentence2), optionally pairID; it has 'id', 'text_a', "
     "'text_b'."),
    ("short.tsv", "premise\thypothesis\na\tb\nonly one\n", "short.tsv:3: 1 column(s), the "
     "header has 2."),
    ("null.jsonl", '{"sentence1": "a", "sentence2": "b"}\n{"sentence1": 7, "sentence2": "b"}\n',
     "null.jsonl:2: the premise must be a sentence, got 7."),
])
def test_a_bad_prediction_input_is_one_sentence_naming_the_line(trained, tmp_path, name, text,
                                                                 message):
    source = tmp_path / name
    source.write_text(text)
    done = cli("predict", f"--workdir={trained}", f"--input={source}")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"error: {source.parent}/{message}"


def test_summary_counts_the_model_a_run_trained(trained):
    """--workdir=RUN: the parameter count of the trained model (its results.json's), the
    same as the model flags that made it give; model flags beside it are refused."""
    import json

    from_run = cli("summary", f"--workdir={trained}")
    assert from_run.returncode == 0, from_run.stderr[-3000:]
    last = from_run.stdout.strip().splitlines()[-1]
    results = json.loads((trained / "results.json").read_text())
    assert last == f"params_excluding_embeddings={results['parameters']['params_excluding_embeddings']}"
    from_flags = cli("summary", "--config=demo", "--vocab_size=16")
    assert from_flags.stdout.strip().splitlines()[-1] == last
    refused = cli("summary", f"--workdir={trained}", "--num_heads=2")
    assert refused.returncode == 1 and refused.stderr.strip().splitlines()[-1] == (
        "error: --workdir counts the model the run trained; leave out --num_heads.")


@pytest.mark.parametrize("record, message", [
    ('{"sentence1": 3, "sentence2": "b", "gold_label": "neutral"}',
     "the premise (sentence1) must be a sentence, got 3."),
    ('{"sentence1": "a", "sentence2": "b", "gold_label": null}',
     "gold_label must be a label name such as 'entailment', got null."),
    # An id beyond the classes (an IndexError traceback in the report's confusion matrix).
    ('{"sentence1": "a", "sentence2": "b", "gold_label": 5}',
     "label id 5 is no class; expected 0 to 2 (entailment, neutral, contradiction), -1 (no "
     "gold label) or a label name."),
])
def test_a_record_of_the_wrong_type_is_one_sentence_naming_file_and_line(trained, tmp_path,
                                                                        record, message):
    """A number or null where a sentence or label belongs, given to evaluate."""
    source = tmp_path / "dev.jsonl"
    source.write_text('{"sentence1": "a b", "sentence2": "c", "gold_label": "neutral"}\n'
                      + record + "\n")
    done = cli("evaluate", f"--workdir={trained}", f"--data={source}")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"error: {source}:2: {message}"


def test_group_by_keeps_records_lacking_the_field_and_prints_a_screenful(trained, tmp_path):
    """A record without the field is its own group, not an abort; a field
    of many values prints its 20 largest groups and a line counting the rest; the JSON
    report holds every group."""
    records = [{"sentence1": "the dog saw the cat", "sentence2": "the cat saw the dog",
                "gold_label": "contradiction", "captionID": f"c{i % 25}"} for i in range(29)]
    records.append({"sentence1": "a dog", "sentence2": "a cat", "gold_label": "neutral"})
    data = tmp_path / "captions.jsonl"
    data.write_text("".join(json.dumps(record) + "\n" for record in records))
    output = tmp_path / "report.json"
    shown = cli("evaluate", f"--workdir={trained}", f"--data={data}", "--group_by=captionID",
                f"--output={output}")
    assert shown.returncode == 0, shown.stderr[-2000:]
    groups = json.loads(output.read_text())["sources"][str(data)]["groups"]["captionID"]
    assert len(groups) == 26 and groups["(missing)"]["examples"] == 1
    assert sum(group["examples"] for group in groups.values()) == 30
    lines = shown.stdout.split("  by captionID:\n", 1)[1].splitlines()
    # The 20 largest, in value order: c0-c3 (2 pairs each) and 16 of one pair.
    assert [line.split()[0] for line in lines[:4]] == ["(missing)", "c0", "c1", "c10"]
    assert lines[20].strip() == ("... and 6 more groups of 6 pairs (the 20 largest are "
                                 "shown; --output's JSON has them all)")


@pytest.mark.parametrize("premise, hypothesis, message", [
    ("  ", "a cat", "the premise is empty: a sentence needs at least one word."),
    (["a dog", ""], ["a cat", "a dog"], "premises[1] is empty"),
    (["a dog"], ["\t"], "hypotheses[0] is empty")])
def test_an_empty_sentence_is_refused_not_classified(trained, premise, hypothesis, message):
    """An empty or blank sentence would be classified from padding alone;
    the Python API refuses it naming which, the CLI too (flag or file line), and data files
    count it among the dropped records (`ReadReport`)."""
    model = dsan_tf.load(str(trained))
    with pytest.raises(ValueError, match=re.escape(message)):
        model.classify(premise, hypothesis)


def test_the_cli_refuses_an_empty_sentence_naming_the_flag_or_line(trained, tmp_path):
    flag = cli("predict", f"--workdir={trained}", "--premise= ", "--hypothesis=a cat")
    assert flag.returncode == 1
    assert flag.stderr.strip() == "error: --premise is empty: a sentence needs at least one word."
    data = tmp_path / "pairs.csv"
    data.write_text("premise,hypothesis\na dog,a cat\nthe dog,  \n")
    line = cli("predict", f"--workdir={trained}", f"--input={data}")
    assert line.returncode == 1
    assert line.stderr.strip().splitlines()[-1] == (
        f"error: {data}:3: the hypothesis is empty; a sentence needs at least one word.")
    records = tmp_path / "eval.jsonl"
    records.write_text(json.dumps({"sentence1": "a dog", "sentence2": "a cat",
                                   "gold_label": "neutral"}) + "\n" +
                       json.dumps({"sentence1": " ", "sentence2": "a cat",
                                   "gold_label": "neutral"}) + "\n")
    output = tmp_path / "report.json"
    ok(cli("evaluate", f"--workdir={trained}", f"--data={records}", f"--output={output}"))
    read = json.loads(output.read_text())["sources"][str(records)]["read"]
    assert read == {"source": str(records), "kept": 1, "dropped": {"empty sentence": 1}}


def test_a_model_without_sentence_vectors_says_why():
    """The message names what the model is (an ensemble's export says
    so, `test_cli.py::test_ensemble_export_serves_the_mean_of_its_members`)."""
    from dsan_tf.saving.serving import SavedModelClassifier

    with pytest.raises(ValueError, match=r"^runs/gt is a pair model \(it reads premise and "
                                         r"hypothesis together\): it has no sentence "
                                         r"embeddings\.$"):
        SavedModelClassifier({"serving_default": None, "encode": None},
                             source="runs/gt").encode("a dog")
    import dsan_tf  # the Keras model of a pair family says the same, naming its source
    from dsan_tf.data import NLIPreprocessor, Vocabulary

    vocabulary = Vocabulary(["a", "dog"])
    model = dsan_tf.build_model("gaussian_transformer", dsan_tf.model_config(
        "gaussian_transformer", vocab_size=vocabulary.size, embedding_dim=10, model_dim=8,
        num_heads=2, char_dim=4))
    model.preprocessor = NLIPreprocessor(vocabulary)
    with pytest.raises(ValueError, match=rf"^{model.name} is a pair model .*embeddings\.$"):
        model.encode("a dog")


def test_a_json_file_cut_off_is_one_sentence_naming_it(trained, tmp_path):
    """A run's config.json cut mid-record (a killed process, an edit),
    or an evaluation file cut short, is one sentence naming the file, the line and the
    column, not a traceback."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(trained, run)
    text = (run / "config.json").read_text()
    (run / "config.json").write_text(text[:len(text) // 2])
    result = cli("summary", f"--workdir={run}")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    message = result.stderr.strip().splitlines()[-1]
    assert re.fullmatch(rf"error: {re.escape(str(run / 'config.json'))} is not valid JSON "
                        r"\(.+: line \d+, column \d+\); the file ends before its closing "
                        r"bracket: was it cut off\?", message), message
    evaluation = tmp_path / "eval.json"
    evaluation.write_text('{"sources": {"snli": {"accuracy": 0.5,, "x": 1}}}')
    result = cli("visualize", f"--workdir={trained}", f"--evaluation={evaluation}",
                 f"--output_dir={tmp_path / 'figures'}")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: {evaluation} is not valid JSON (Expecting property name enclosed in double "
        "quotes: line 1, column 39).")


@pytest.mark.parametrize("program", ["evaluate", "visualize", "ensemble", "predict"])
def test_a_named_config_is_refused_where_the_model_comes_from_a_run(program, tmp_path):
    """`--config` (then `--preset`) was accepted and ignored by the programs that read a
    trained run; it is refused in one sentence saying where their configuration comes
    from, before anything is loaded."""
    from helpers import run_in_process

    done = run_in_process(program, f"--workdir={tmp_path}", "--config=dsan_snli")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: Unknown command line flag 'config'; this program takes the model and its "
        "configuration from --workdir (a run or an export); --config names a configuration "
        "to train.")


def test_the_old_preset_flag_says_it_is_now_config(tmp_path):
    """A preset is a trained model loaded by name; the training
    configurations' flag is --config, and --preset, its old name, says so."""
    from helpers import run_in_process

    done = run_in_process("train", "--preset=demo", f"--workdir={tmp_path / 'run'}")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: Unknown command line flag 'preset'; it is now --config=NAME "
        "(dsan_tf.configs()), and a preset is a trained model loaded by name "
        "(dsan_tf.presets()).")
    assert not (tmp_path / "run").exists()


def test_a_named_configs_missing_path_names_it_and_where_it_was_looked_for(tmp_path):
    """A named configuration's ../shared/data paths, run away from a clone, failed
    deep in reading without saying what they are relative to."""
    from helpers import run_in_process

    done = run_in_process("train", "--config=snli25k_glove50",
                          f"--workdir={tmp_path / 'run'}", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: --config=snli25k_glove50 gives --train_data=../shared/data/snli/"
        f"snli_1.0_train_25k.jsonl.gz, which is no file from {tmp_path}: a configuration's "
        "paths are relative to the directory a program runs in (its ../shared/data paths to a "
        "clone's root); run from there, or give --train_data.")
    assert not (tmp_path / "run").exists()


def test_an_ensemble_of_one_run_given_twice_is_refused(trained):
    done = cli("ensemble", f"--workdir={trained}", f"--workdir={trained}/",
               "--data=synthetic:word_order/dev")
    assert done.returncode == 1
    assert done.stderr.strip() == (f"error: --workdir={trained}/ is given twice (as "
                                   f"--workdir={trained}): an ensemble of a run with itself "
                                   "is that run.")


def test_a_file_that_holds_no_word_vectors_is_named_as_such(tmp_path):
    """--embeddings pointing at a JSON-lines data file: one sentence saying the file holds
    a vector for none of the words, not a width mismatch."""
    vectors = tmp_path / "dev.jsonl"
    vectors.write_text('{"sentence1": "a b", "sentence2": "c", "gold_label": "neutral"}\n' * 3)
    done = cli("train", "--config=demo", f"--workdir={tmp_path / 'run'}",
               f"--embeddings={vectors}")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith(
        f"error: --embeddings={vectors} has a vector for none of the ")
    assert "embedding_dim" not in done.stderr


def test_figure_6_keeps_a_curve_for_each_run_and_source_whose_short_names_collide(tmp_path):
    """`visualize --evaluation`: two runs in folders of one name (seed0/dsan, seed1/dsan),
    each scored on mine.jsonl and mine.tsv, are four curves, each labelled with what tells
    it apart and drawing its own accuracies; the short names stay where nothing collides."""
    from dsan_tf.evaluation import plots
    from dsan_tf.programs import visualize

    specs = []
    for seed in (0, 1):
        run = tmp_path / f"seed{seed}" / "dsan"
        run.mkdir(parents=True)
        sources = {f"data/mine.{ending}": {"accuracy_by_length": [
            {"min_length": 1, "max_length": 9, "examples": 500,
             "accuracy": seed / 10 + index / 100}]}
            for index, ending in enumerate(("jsonl", "tsv"))}
        (run / "eval.json").write_text(json.dumps({"workdir": str(run), "sources": sources}))
        specs.append(str(run / "eval.json"))
    curves = visualize.load_evaluations(specs)
    assert list(curves) == ["seed0/dsan on mine.jsonl", "seed0/dsan on mine.tsv",
                            "seed1/dsan on mine.jsonl", "seed1/dsan on mine.tsv"]
    axis = plots.accuracy_by_length(curves).axes[0]
    drawn = {line.get_label(): list(line.get_ydata()) for line in axis.get_lines()}
    assert drawn == {"seed0/dsan on mine.jsonl": [0.0], "seed0/dsan on mine.tsv": [1.0],
                     "seed1/dsan on mine.jsonl": [10.0], "seed1/dsan on mine.tsv": [11.0]}
    assert list(visualize.load_evaluations([f"mine={specs[0]}"])) == [
        "mine on mine.jsonl", "mine on mine.tsv"]
