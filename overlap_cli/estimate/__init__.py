"""Step-time estimate of one training step from a resolved config (``overlap estimate``, ``overlap tune``).

``inputs.shape_from_view`` is the one reader of the resolved view; ``flops`` counts the model's work;
``model.estimate`` turns a shape and a GPU into a step time with the exposed communication per part;
``constants.json`` holds the fitted constants (``tools/fit_estimate.py`` regenerates it); ``tune`` searches
the overlap settings.
"""
