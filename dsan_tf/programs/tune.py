r"""Sweeps configuration fields with Ray Tune, stopping poor trials early (ASHA on dev
accuracy, epoch by epoch); each trial is an ordinary run directory under
WORKDIR/trials/ that every program reads.

    dsan-tune --config=demo --workdir=/tmp/sweep --num_samples=8 \
        --search=learning_rate:loguniform:1e-4:3e-3 \
        --search=distance_alpha:choice:0,1,1.5,2

Every training flag of dsan-train sets what the trials share. Killed, the same command
goes on with the sweep where it stopped (each trial's run resumes from its record). It ends
with the trials sorted by dev accuracy and the command that trains the best one again.
Needs Ray (pip install -r requirements-ray.txt); --ray_address joins a cluster.
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
    flags.DEFINE_integer("num_samples", 4, "Trials drawn (each grid point this many times).",
                         lower_bound=1)
    flags.DEFINE_integer("grace_period", 1, "ASHA: epochs every trial trains before it may "
                         "be stopped.", lower_bound=1)
    flags.DEFINE_integer("reduction_factor", 2, "ASHA: a trial goes on past a rung only "
                         "when among the best 1/reduction_factor there.", lower_bound=2)
    flags.DEFINE_float("cpus_per_trial", 1.0, "CPUs each trial declares.")
    flags.DEFINE_float("gpus_per_trial", 0.0, "GPUs each trial declares (a fraction shares "
                       "one GPU).")
    flags.DEFINE_string("ray_address", None, "The Ray cluster: auto or ray://HOST:PORT; "
                        "default: Ray starts on this machine.")


@program.main(tensorflow=False, required={"workdir": "the sweep's folder",
                                           "search": "a field to search"})
def main(argv):
    from dsan_tf.training import cluster, sweep

    cluster.require_ray()
    cluster.task_options(FLAGS.cpus_per_trial, FLAGS.gpus_per_trial)
    config, policy = project_flags.experiment_config(), project_flags.run_policy()
    searches = [sweep.parse_search(spec, config) for spec in FLAGS.search]
    rows = sweep.run_sweep(
        FLAGS.workdir, config, policy, searches, FLAGS.num_samples,
        {"grace_period": FLAGS.grace_period, "reduction_factor": FLAGS.reduction_factor},
        {"cpus": FLAGS.cpus_per_trial, "gpus": FLAGS.gpus_per_trial}, FLAGS.ray_address)
    if not rows:
        raise program.UsageError(f"no trial of {FLAGS.workdir} trained an epoch.")
    print(sweep.table(rows))
    print(f"best: {rows[0]['trial']} (dev accuracy {rows[0]['dev_accuracy']:.4f}); train it "
          f"again: {sweep.best_command(rows[0])}")


def cli():
    program.run(main, define_flags)


if __name__ == "__main__":
    cli()
