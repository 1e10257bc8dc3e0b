"""The names of the choices that layers check and configurations offer: plain Python at the
bottom of the package, so that layers (below the model families) and the families'
configurations (above them) read one definition.
"""

# How attention favours nearby words (dsan_tf.layers.DistancePrior): DSAN's linear α·M_dis,
# none (its Table 1 ablation), and the Gaussian Transformer paper's alternatives.
PRIORS = ("linear", "gaussian", "gaussian_variant", "zipf", "learned", "none")
FUSIONS = ("projected", "raw")  # what the fusion gate reads (dsan_tf.layers.FusionGate)
# How the DSAN layers start (dsan_tf.layers.utils.dense_initializers): Glorot-uniform kernels
# and zero biases, or SAN4NLI-pytorch's (Xavier-normal and PyTorch's nn.Linear default).
INITIALIZATIONS = ("glorot", "san4nli")
# Max pooling over real tokens only, or over the padded sentence with padding as 0 (SAN4NLI's).
MAX_POOL_PADDINGS = ("masked", "zeros")
# Where the project keeps what it makes once per machine (word-vector matrices, JAX's
# compiled steps): `DataConfig.embeddings_cache_dir`'s default, and the cache of a task
# model's compiled steps from Python (dsan_tf.speed.compilation.default_jax_cache).
CACHE_DIR = "~/.cache/dsan_tf"
