#!/bin/bash
# The per-epoch cost of a sweep's trial: f9adf8b (train_run restarted for every epoch) against this
# commit (one fit, a Keras callback reporting each epoch), side by side on one machine, one trial.
S=${SHARED:-$(git rev-parse --show-toplevel)/../shared/data}
F="--config=snli25k_glove50 --train_data=$S/snli/snli_1.0_train_25k.jsonl.gz --dev_data=$S/snli/snli_1.0_dev.jsonl.gz --embeddings=$S/glove/glove.6B.50d.top100k.txt.gz --steps_per_epoch=40 --dev_subset=1000 --epochs=6 --search=learning_rate:grid:0.001 --num_samples=1 --cpus_per_trial=2"
# OLD: a worktree of the older commit (git worktree add /tmp/old f9adf8b).
OLD=${OLD:-/tmp/old}
for which in old new old new; do
  W=$(mktemp -d)/sweep_$which; rm -rf $W
  if [ $which = old ]; then dir=$OLD; else dir=$(git rev-parse --show-toplevel); fi
  start=$(date +%s.%N)
  (cd $dir && PYTHONPATH=$dir python -m dsan_tf.programs.tune --workdir=$W $F > $W.out 2>&1)
  end=$(date +%s.%N)
  python - "$which" "$W" "$start" "$end" <<'PY'
import sys, glob, csv
which, w, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
h = glob.glob(w + "/trials/*/history.csv")[0]
rows = list(csv.DictReader(open(h)))
fit = sum(float(r["seconds"]) for r in rows)
total = end - start
print(f"{which}: {len(rows)} epochs, sweep wall {total:.1f} s, epochs' own time {fit:.1f} s, rest {total - fit:.1f} s")
PY
done
