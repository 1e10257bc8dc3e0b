r"""Sweeps configuration fields with Ray Tune, stopping poor trials early (ASHA on dev
accuracy, epoch by epoch); each trial is an ordinary run directory under
WORKDIR/trials/ (named by its Tune trial id and values) that every program reads.

    dsan-tune --config=demo --workdir=/tmp/sweep --num_samples=8 \
        --search=learning_rate:loguniform:1e-4:3e-3 \
        --search=distance_alpha:choice:0,1,1.5,2

Every training flag of dsan-train sets what the trials share. Killed or stopped with
Ctrl-C, the same command goes on with the sweep where it stopped (each trial's run resumes
from its record). It ends with the trials sorted by dev accuracy, each one's state, and the
command that trains the best one again; it exits 1 where a trial errored (its first error
line in the table) and 130 where it was interrupted. Needs Ray (pip install -r
requirements-ray.txt); --ray_address joins a cluster started with `ray start`.
"""

from absl import flags

from dsan_tf.programs import flags as project_flags
from dsan_tf.programs import program

FLAGS = project_flags.FLAGS


def define_flags():
    project_flags.define_experiment_flags()
    project_flags.refuse_inside_runs("workdir")
    flags.DEFINE_multi_string("search", None, "A field and its space: FIELD:loguniform:"
                              "LOW:HIGH, FIELD:uniform:LOW:HIGH, FIELD:choice:V1,V2,... or "
                              "FIELD:grid:V1,V2,... (repeat for several fields).")
    flags.DEFINE_integer("num_samples", 4, "Trials drawn (each grid point this many times); "
                         "above 1, each trial trains with its own seed (--seed plus its "
                         "number), so that repeats of the same values are replicates.",
                         lower_bound=1)
    flags.DEFINE_enum("search_alg", "random", ["random", "optuna"], "How trials are drawn: "
                      "random (Tune's random draws and grids) or optuna (Optuna's TPE, "
                      "guided by the trials' dev accuracy; no grid).")
    flags.DEFINE_integer("grace_period", 1, "ASHA: epochs every trial trains before it may "
                         "be stopped.", lower_bound=1)
    flags.DEFINE_integer("reduction_factor", 2, "ASHA: a trial goes on past a rung only "
                         "when among the best 1/reduction_factor there.", lower_bound=2)
    flags.DEFINE_float("cpus_per_trial", 1.0, "CPUs each trial declares.")
    flags.DEFINE_float("gpus_per_trial", 0.0, "GPUs each trial declares (a fraction shares "
                       "one GPU, each trial kept to its share of the GPU's memory).")
    flags.DEFINE_string("ray_address", None, "The Ray cluster: auto (the one `ray start` "
                        "made on this machine) or HOST:PORT of its head; default: Ray "
                        "starts on this machine.")


@program.main(tensorflow=False, required={"workdir": "the sweep's folder",
                                           "search": "a field to search"})
def main(argv):
    from dsan_tf.training import cluster, sweep

    cluster.require_ray()
    cluster.task_options(FLAGS.cpus_per_trial, FLAGS.gpus_per_trial)
    config, policy = project_flags.experiment_config(), project_flags.run_policy()
    searches = tuple(sweep.parse_search(spec, config) for spec in FLAGS.search)
    sweep.check_search_alg(FLAGS.search_alg, searches)
    rows, interrupted = sweep.run_sweep(FLAGS.workdir, sweep.Sweep(
        config, policy, searches, FLAGS.num_samples, FLAGS.search_alg,
        {"grace_period": FLAGS.grace_period, "reduction_factor": FLAGS.reduction_factor},
        {"cpus": FLAGS.cpus_per_trial, "gpus": FLAGS.gpus_per_trial}), FLAGS.ray_address)
    print(sweep.table(rows))
    if interrupted:
        raise program.Interrupted("the same command resumes the sweep.")
    errored = [row for row in rows if row["error"]]
    trained = [row for row in rows if row["dev_accuracy"] is not None]
    if trained:
        print(f"best: {trained[0]['trial']} (dev accuracy {trained[0]['dev_accuracy']:.4f}); "
              f"train it again: {sweep.best_command(trained[0])}")
        print(f"TensorBoard: tensorboard --logdir {trained[0]['workdir'].rsplit('/', 1)[0]}")
    if errored:
        program.fail(f"{len(errored)} of {len(rows)} trials errored (each one's first error "
                     "line in the table above).")
    if not trained:
        program.fail(f"no trial of {FLAGS.workdir} trained an epoch.")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
