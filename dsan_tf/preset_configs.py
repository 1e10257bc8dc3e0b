"""The named configurations (presets): the papers' configurations, the study's setting and
the demo, as {field name: value} (`dsan_tf.config.ExperimentConfig`'s flat names, the flags'
names). Plain data at the bottom of the package: `ExperimentConfig.from_preset(name,
**overrides)` builds one, `dsan_tf.presets()` lists them, every program takes
`--preset=NAME` with flags on top. experiments/configs/NAME.cfg holds the same values as
flagfiles for absl users (tests/test_presets.py keeps the two equal).

A preset with a `base` is that preset's values with its own on top; a base's model fields
that the preset's family lacks are left out.
"""

# name -> (one line saying what it is, the preset it builds on or None, {field: value})
PRESETS = {
    'demo': (
        ('DSAN on the generated word-order task: offline, about a minute on a CPU (add a '
         'workdir).'),
        None,
        {'train_data': 'synthetic:word_order/train',
         'dev_data': 'synthetic:word_order/dev',
         'embeddings': 'random',
         'embedding_dim': 32,
         'num_heads': 4,
         'ffn_dim': 64,
         'classifier_units': 32,
         'dropout': 0.0,
         'batch_size': 32,
         'learning_rate': 0.003,
         'epochs': 12}),
    'snli25k_glove50': (
        ("The study's setting: DSAN on 25,299 SNLI pairs with frozen lower-cased GloVe 6B "
         '50d, selected on SNLI dev, patience 3 (paths: a clone beside ../shared/data).'),
        None,
        {'train_data': '../shared/data/snli/snli_1.0_train_25k.jsonl.gz',
         'dev_data': '../shared/data/snli/snli_1.0_dev.jsonl.gz',
         'embeddings': '../shared/data/glove/glove.6B.50d.top100k.txt.gz',
         'lowercase': True,
         'trainable_embeddings': False,
         'embedding_dim': 50,
         'num_heads': 5,
         'ffn_dim': 200,
         'classifier_units': 300,
         'dropout': 0.1,
         'batch_size': 64,
         'batching': 'sorted_chunks',
         'learning_rate': 0.001,
         'epochs': 30,
         'patience': 3,
         'seed': 0}),
    'gaussian_transformer_snli25k_glove50': (
        ("The Gaussian Transformer at the study's setting: the paper's blocks and AdamWR, "
         'carried to 25k pairs by epochs.'),
        'snli25k_glove50',
        {'model': 'gaussian_transformer',
         'char_dim': 30,
         'model_dim': 120,
         'num_heads': 4,
         'num_encoder_blocks': 3,
         'num_interaction_blocks': 2,
         'distance_prior': 'gaussian_variant',
         'optimizer': 'adamw',
         'learning_rate': 0.0003,
         'min_learning_rate': 4e-05,
         'normalized_weight_decay': 0.0016666666666666668,
         'restart_epochs': 10}),
    'afdmn_snli25k_glove50': (
        ("AF-DMN at the study's setting: the paper's k = 3, dropout 0.2 and halving "
         'schedule, LSTM width 100.'),
        'snli25k_glove50',
        {'model': 'afdmn',
         'lstm_units': 100,
         'matching_blocks': 3,
         'dropout': 0.2,
         'trainable_embeddings': True,
         'max_length': 200,
         'oov_init': 'random',
         'oov_scale': 0.01,
         'initialization': 'esim',
         'optimizer': 'adam',
         'learning_rate': 0.0002,
         'halve_on_dev_drop': True}),
    'dsan_snli': (
        ('Table 1, DSAN (Im & Cho 2017) on SNLI: 86.3% test, 4.7M parameters; GloVe 840B '
         '300d frozen, Adam 1e-3, batch 64.'),
        None,
        {'embedding_dim': 300,
         'num_heads': 5,
         'ffn_dim': 1200,
         'distance_prior': 'linear',
         'distance_alpha': 1.5,
         'use_direction_mask': True,
         'fusion': 'projected',
         'pooling': 'multi_dim_max',
         'dropout': 0.1,
         'classifier_units': 300,
         'trainable_embeddings': False,
         'train_data': 'tfds:snli/train',
         'dev_data': 'tfds:snli/validation',
         'test_data': 'tfds:snli/test',
         'embeddings': 'glove:840B.300d',
         'batch_size': 64,
         'learning_rate': 0.001,
         'epochs': 20}),
    'dsan_no_distance_snli': (
        "Table 1's ablation: DSAN without the distance mask (86.0% SNLI test).",
        None,
        {'embedding_dim': 300,
         'num_heads': 5,
         'ffn_dim': 1200,
         'distance_prior': 'none',
         'distance_alpha': 1.5,
         'use_direction_mask': True,
         'fusion': 'projected',
         'pooling': 'multi_dim_max',
         'dropout': 0.1,
         'classifier_units': 300,
         'trainable_embeddings': False,
         'train_data': 'tfds:snli/train',
         'dev_data': 'tfds:snli/validation',
         'test_data': 'tfds:snli/test',
         'embeddings': 'glove:840B.300d',
         'batch_size': 64,
         'learning_rate': 0.001,
         'epochs': 20}),
    'dsan_multinli': (
        ('Table 2, DSAN on MultiNLI (74.1 matched / 72.9 mismatched), selected on matched '
         'dev.'),
        None,
        {'embedding_dim': 300,
         'num_heads': 5,
         'ffn_dim': 1200,
         'distance_prior': 'linear',
         'distance_alpha': 1.5,
         'use_direction_mask': True,
         'fusion': 'projected',
         'pooling': 'multi_dim_max',
         'dropout': 0.1,
         'classifier_units': 300,
         'trainable_embeddings': False,
         'train_data': 'tfds:multi_nli/train',
         'dev_data': 'tfds:multi_nli/validation_matched',
         'test_data': 'tfds:multi_nli/validation_mismatched',
         'embeddings': 'glove:840B.300d',
         'batch_size': 64,
         'learning_rate': 0.001,
         'epochs': 20}),
    'gaussian_transformer_snli': (
        ('The Gaussian Transformer (Guo, Zhang & Liu 2019) on SNLI (Table 2: 89.2% test): '
         'M = 3, N = 2, H = 4, AdamWR.'),
        None,
        {'model': 'gaussian_transformer',
         'embedding_dim': 300,
         'char_dim': 30,
         'model_dim': 120,
         'num_heads': 4,
         'num_encoder_blocks': 3,
         'num_interaction_blocks': 2,
         'distance_prior': 'gaussian_variant',
         'dropout': 0.1,
         'trainable_embeddings': False,
         'optimizer': 'adamw',
         'learning_rate': 0.0003,
         'min_learning_rate': 4e-05,
         'normalized_weight_decay': 0.0016666666666666668,
         'restart_epochs': 10,
         'train_data': 'tfds:snli/train',
         'dev_data': 'tfds:snli/validation',
         'test_data': 'tfds:snli/test',
         'embeddings': 'glove:840B.300d',
         'batch_size': 64,
         'epochs': 30}),
    'gaussian_transformer_multinli': (
        ('The Gaussian Transformer on MultiNLI (Table 3: 80.0% matched, 79.4% mismatched '
         'test).'),
        None,
        {'model': 'gaussian_transformer',
         'embedding_dim': 300,
         'char_dim': 30,
         'model_dim': 120,
         'num_heads': 4,
         'num_encoder_blocks': 3,
         'num_interaction_blocks': 2,
         'distance_prior': 'gaussian_variant',
         'dropout': 0.1,
         'trainable_embeddings': False,
         'optimizer': 'adamw',
         'learning_rate': 0.0003,
         'min_learning_rate': 4e-05,
         'normalized_weight_decay': 0.0016666666666666668,
         'restart_epochs': 10,
         'train_data': 'tfds:multi_nli/train',
         'dev_data': 'tfds:multi_nli/validation_matched',
         'test_data': 'tfds:multi_nli/validation_mismatched',
         'embeddings': 'glove:840B.300d',
         'batch_size': 64,
         'epochs': 30}),
    'afdmn_snli': (
        ('AF-DMN (Duan et al. 2018) on SNLI (Table 2: 88.6% test): k = 3, Adam 2e-4 halved'
         ' when dev drops.'),
        None,
        {'model': 'afdmn',
         'embedding_dim': 300,
         'lstm_units': 300,
         'matching_blocks': 3,
         'dropout': 0.2,
         'trainable_embeddings': True,
         'lowercase': True,
         'max_length': 200,
         'oov_init': 'random',
         'oov_scale': 0.01,
         'initialization': 'esim',
         'optimizer': 'adam',
         'learning_rate': 0.0002,
         'halve_on_dev_drop': True,
         'train_data': 'tfds:snli/train',
         'dev_data': 'tfds:snli/validation',
         'test_data': 'tfds:snli/test',
         'embeddings': 'glove:840B.300d',
         'batch_size': 64,
         'epochs': 30}),
    'afdmn_multinli': (
        'AF-DMN on MultiNLI (Table 3: 76.9% in-domain, 76.3% cross-domain test): k = 2.',
        None,
        {'model': 'afdmn',
         'embedding_dim': 300,
         'lstm_units': 300,
         'matching_blocks': 2,
         'dropout': 0.2,
         'trainable_embeddings': True,
         'lowercase': True,
         'max_length': 200,
         'oov_init': 'random',
         'oov_scale': 0.01,
         'initialization': 'esim',
         'optimizer': 'adam',
         'learning_rate': 0.0002,
         'halve_on_dev_drop': True,
         'train_data': 'tfds:multi_nli/train',
         'dev_data': 'tfds:multi_nli/validation_matched',
         'test_data': 'tfds:multi_nli/validation_mismatched',
         'embeddings': 'glove:840B.300d',
         'batch_size': 64,
         'epochs': 30}),
}


def names():
    """The presets' names, in `PRESETS` order."""
    return tuple(PRESETS)


def describe():
    """{name: the one line saying what it is}."""
    return {name: entry[0] for name, entry in PRESETS.items()}


def values(name):
    """{field name: value} of preset `name`, its base's first; ValueError naming the
    presets otherwise."""
    if name not in PRESETS:
        raise ValueError(f"no preset {name!r}; the presets: {', '.join(PRESETS)}.")
    _, base, own = PRESETS[name]
    return {**(values(base) if base else {}), **own}
