"""Kernels, kernel mean embeddings, Nyström maps and summary features of distributions."""
from milopt.features.kernels import check_kernel, instance_kernel, kernel_matrix, mean_embedding_kernel  # noqa: F401
from milopt.features.nystrom import NystromMap, fit_bag_nystrom, stratified_sample  # noqa: F401
from milopt.features.summary import summary_bags, summary_features  # noqa: F401

__all__ = ["check_kernel", "kernel_matrix", "instance_kernel", "mean_embedding_kernel", "NystromMap",
           "fit_bag_nystrom", "stratified_sample", "summary_bags", "summary_features"]
