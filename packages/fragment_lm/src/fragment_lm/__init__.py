"""fragment_lm: the paper-fragment capstone (M10) over M02's, M03's and M05's layers.

Graded names (``FRAGMENT_LM_MODULE``): ``FragmentConfig`` and ``PaperFragmentLM``.
"""

from .config import FragmentConfig
from .examples import tiny_random_fragment
from .layers import CachedAttention, FragmentLayer
from .model import FragmentModel, PaperFragmentLM, PaperFragmentOutput

__all__ = [
    "CachedAttention",
    "FragmentConfig",
    "FragmentLayer",
    "FragmentModel",
    "PaperFragmentLM",
    "PaperFragmentOutput",
    "tiny_random_fragment",
]
