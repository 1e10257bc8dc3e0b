"""The Gaussian Transformer's named configurations: its paper's (Guo, Zhang & Liu 2019,
Tables 2 and 3) and the study's setting (`dsan_tf.configs()`; the entries' format:
`dsan_tf.models.registry.Family.configs`).
"""

CONFIGS = {
    'gaussian_transformer_snli25k_glove50': (
        ("The Gaussian Transformer at the study's setting: the paper's blocks and AdamWR, "
         'carried to 25k pairs by epochs.'),
        'snli25k_glove50',
        {'char_dim': 30,
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
    'gaussian_transformer_snli': (
        ('The Gaussian Transformer (Guo, Zhang & Liu 2019) on SNLI (Table 2: 89.2% test): '
         'M = 3, N = 2, H = 4, AdamWR.'),
        None,
        {'embedding_dim': 300,
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
        'gaussian_transformer_snli',
        {'train_data': 'tfds:multi_nli/train',
         'dev_data': 'tfds:multi_nli/validation_matched',
         'test_data': 'tfds:multi_nli/validation_mismatched'}),
}
