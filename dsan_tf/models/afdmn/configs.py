"""AF-DMN's named configurations: its paper's (Duan et al. 2018, Tables 2 and 3) and the
study's setting
(`dsan_tf.configs()`; the entries' format: `dsan_tf.models.registry.Family.configs`).
"""

CONFIGS = {
    'afdmn_snli25k_glove50': (
        ("AF-DMN at the study's setting: the paper's k = 3, dropout 0.2 and halving "
         'schedule, LSTM width 100.'),
        'snli25k_glove50',
        {'lstm_units': 100,
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
    'afdmn_snli': (
        ('AF-DMN (Duan et al. 2018) on SNLI (Table 2: 88.6% test): k = 3, Adam 2e-4 halved'
         ' when dev drops.'),
        None,
        {'embedding_dim': 300,
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
        'afdmn_snli',
        {'matching_blocks': 2,
         'train_data': 'tfds:multi_nli/train',
         'dev_data': 'tfds:multi_nli/validation_matched',
         'test_data': 'tfds:multi_nli/validation_mismatched'}),
}
