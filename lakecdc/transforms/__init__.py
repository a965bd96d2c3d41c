"""Kafka Connect single message transforms applied by lakecdc's capture (see ``chain``)."""

from lakecdc.transforms.base import TransformContext, TransformDataError
from lakecdc.transforms.chain import PREDICATES, TRANSFORMS, TransformChain, build_chain

__all__ = ["PREDICATES", "TRANSFORMS", "TransformChain", "TransformContext", "TransformDataError", "build_chain"]
