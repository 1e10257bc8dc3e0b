"""The names of the choices that layers check and configurations offer: plain Python at the
bottom of the package, so that layers (below the model families) and the families'
configurations (above them) read one definition.
"""

# How attention favours nearby words (dsan_tf.layers.DistancePrior): DSAN's linear α·M_dis,
# none (its Table 1 ablation), and the Gaussian Transformer paper's alternatives.
PRIORS = ("linear", "gaussian", "gaussian_variant", "zipf", "learned", "none")
FUSIONS = ("projected", "raw")  # what the fusion gate reads (dsan_tf.layers.FusionGate)
