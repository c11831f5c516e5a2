# Every op family, once, with the layers that implement it: `ops` has its
# schemas and shape rules in ops/<family>.cpp (register_<family>_schemas),
# `cpu` and `cuda` their kernels in cpu/<family>.cpp and
# cuda/<family>.{cpp,cu} (register_<family>_kernels). Each layer's registry
# calls the functions this list names (cmake/TandemOpFamilies.cmake writes
# the calls), so a new family is its files plus one line here. Families
# split differently per layer where one file serves several op groups
# (cuda/data.cu: concat, cast, gather, ...).
#                family       layers
tandem_op_family(attention    ops cpu cuda)
tandem_op_family(batchnorm    cpu cuda)
tandem_op_family(binary       cpu cuda)
tandem_op_family(broadcast    ops)
tandem_op_family(cast         ops cpu)
tandem_op_family(compare      cpu)
tandem_op_family(concat       ops cpu)
tandem_op_family(constant     ops cpu)
tandem_op_family(conv         ops cpu cuda)
tandem_op_family(data         cuda)
tandem_op_family(elementwise  ops)
tandem_op_family(eltwise      cpu cuda)
tandem_op_family(expand       cpu)
tandem_op_family(gather       ops cpu)
tandem_op_family(gemm         ops cpu cuda)
tandem_op_family(layernorm    cpu cuda)
tandem_op_family(logical      cuda)
tandem_op_family(mod          cpu)
tandem_op_family(norm         ops)
tandem_op_family(pad          ops cpu cuda)
tandem_op_family(pool         ops cpu cuda)
tandem_op_family(qconv        ops cpu cuda)
tandem_op_family(quantize     ops cpu cuda)
tandem_op_family(reduce       ops cpu cuda)
tandem_op_family(reorder      ops cpu cuda)
tandem_op_family(reshape      ops cpu)
tandem_op_family(resize       ops cpu cuda)
tandem_op_family(scatter      ops cpu)
tandem_op_family(slice        ops cpu cuda)
tandem_op_family(softmax      ops cpu cuda)
tandem_op_family(topk         ops cpu cuda)
tandem_op_family(transpose    ops cpu)
