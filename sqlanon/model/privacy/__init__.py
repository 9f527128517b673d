"""Privacy models, each with all its faces (:mod:`.base`), one module per model."""

# imported in the order the registry lists the models (MODELS: error messages name them so)
from .anonymity import KAnonymity
from .base import BAD, MODELS, SIZE, TOLERANCE, VALUE, Constraint, PrivacyModel, beyond_k, check_models, from_record, to_record
from .closeness import DISTANCES, Ground, TCloseness
from .disclosure import DeltaDisclosure
from .diversity import DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity
from .likeness import BetaLikeness
from .variance import VarianceDiversity

__all__ = ["BAD", "DISTANCES", "MODELS", "SIZE", "TOLERANCE", "VALUE", "BetaLikeness", "DeltaDisclosure",
           "DistinctLDiversity", "EntropyLDiversity", "Ground", "Constraint", "KAnonymity", "PrivacyModel",
           "RecursiveCLDiversity", "TCloseness", "VarianceDiversity", "beyond_k", "check_models", "from_record",
           "to_record"]
