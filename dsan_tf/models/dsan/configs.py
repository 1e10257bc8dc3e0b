"""DSAN's named configurations: the demo, the study's setting, and Tables 1 and 2 of Im &
Cho (2017)
(`dsan_tf.configs()`; the entries' format: `dsan_tf.models.registry.Family.configs`).
"""

CONFIGS = {
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
        'dsan_snli',
        {'distance_prior': 'none'}),
    'dsan_multinli': (
        ('Table 2, DSAN on MultiNLI (74.1 matched / 72.9 mismatched), selected on matched '
         'dev.'),
        'dsan_snli',
        {'train_data': 'tfds:multi_nli/train',
         'dev_data': 'tfds:multi_nli/validation_matched',
         'test_data': 'tfds:multi_nli/validation_mismatched'}),
    'san4nli': (
        ("SAN4NLI-pytorch's model (baaesh/SAN4NLI-pytorch) at the study's setting: every "
         'departure from the paper (docs/FIDELITY.md rows 69-80) on, classifier width d_e, '
         'plain shuffled batches.'),
        'snli25k_glove50',
        {'classifier_units': 50,
         'classifier_input_dropout': True,
         'attention_scale': 'd_e',
         'qkv_norm': 'shared',
         'fusion_norm': 'shared',
         'fusion_output_norm': True,
         'ffn_dropout': True,
         's2t_norm': 'shared',
         'max_pool_padding': 'zeros',
         'initialization': 'san4nli',
         'batching': 'plain'}),
    'san4nli_paper_classifier': (
        ("SAN4NLI's model with the paper's 300-unit classifier: the best measured at 25,299 "
         'SNLI pairs (72.2 ± 0.5 dev over 3 seeds, docs/STUDY.md), offered for small data; '
         "the paper's configuration stays the default."),
        'san4nli',
        {'classifier_units': 300}),
}
