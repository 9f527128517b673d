"""Privacy models, each with all its faces (:mod:`.base`), one module per model."""

# imported in the order the registry lists the models (MODELS: error messages name them so)
from .anonymity import KAnonymity
from .diversity import DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity
from .variance import VarianceDiversity
from .closeness import DISTANCES, Ground, TCloseness
from .disclosure import DeltaDisclosure
from .likeness import BetaLikeness
from .base import MODELS, SIZE, VALUE, BAD, TOLERANCE, Constraint, PrivacyModel, beyond_k, check_models, from_record, \
    to_record

__all__ = ["BAD", "DISTANCES", "MODELS", "SIZE", "TOLERANCE", "VALUE", "BetaLikeness", "DeltaDisclosure",
           "DistinctLDiversity", "EntropyLDiversity", "Ground", "Constraint", "KAnonymity", "PrivacyModel",
           "RecursiveCLDiversity", "TCloseness", "VarianceDiversity", "beyond_k", "check_models", "from_record",
           "to_record"]
