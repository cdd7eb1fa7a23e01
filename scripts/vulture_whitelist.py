"""Names the dead-code check (vulture, run by bin/check) cannot see used, each with why.

Add a name here only when something outside the code reads it (a framework, a protocol, the
API server); code nothing uses is deleted instead. Markers that cover whole families
(validators, fixtures, hooks) are in ``[tool.vulture]`` in pyproject.toml.
"""

from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# Fields of Kubernetes kinds nodewright does not read: declared so loading checks their type
# (the models keep unknown fields, and write every field back on update).
_.service_name
_.pod_management_policy
_.desired_healthy
_.node_id
_.topology_keys
_.attacher
_.pod_template_generation
_.acquire_time
_.container_port
_.time_added
_.read_only
_.host_network
_.access_modes
_.claim_ref
_.node_class_observed_generation
_.block_owner_deletion
_.deletion_grace_period_seconds
_.volume_initialization_rate  # EC2NodeClass blockDeviceMappings[].ebs

# NodeClass fields that only shape the generated CRD: Karpenter's providers accept them, the
# provider here does not act on them (yet).
_.ip_prefix_count  # EC2NodeClass
_.availability_zone  # EC2NodeClass status.capacityReservations[]
_.end_time
_.reservation_type
_.available_instance_count
_.query_logging  # AKSNodeClass spec.localDNS and its overrides
_.forward_destination
_.forward_policy
_.max_concurrent
_.cache_duration
_.serve_stale_duration
_.serve_stale
_.vnet_dns_overrides
_.kube_dns_overrides
_.local_dns
_.local_dns_state
_.size_gb  # the sample model of tests/plugin/test_crd_generation.py
_.disk
_.bytes_per_second

# AKSNodeClass spec.linuxOSConfig.sysctls: the AKS machine request takes them through the
# model's dump (nodewright_azure.linuxosconfig.machine_linux_os_config), never by attribute.
_.fs_aio_max_nr
_.fs_file_max
_.fs_inotify_max_user_watches
_.fs_nr_open
_.kernel_threads_max
_.net_core_netdev_max_backlog
_.net_core_optmem_max
_.net_core_rmem_default
_.net_core_rmem_max
_.net_core_somaxconn
_.net_core_wmem_default
_.net_core_wmem_max
_.net_ipv4_neigh_default_gc_thresh1
_.net_ipv4_neigh_default_gc_thresh2
_.net_ipv4_neigh_default_gc_thresh3
_.net_ipv4_tcp_fin_timeout
_.net_ipv4_tcp_keepalive_probes
_.net_ipv4_tcp_keepalive_time
_.net_ipv4_tcp_max_syn_backlog
_.net_ipv4_tcp_max_tw_buckets
_.net_ipv4_tcp_tw_reuse
_.net_ipv4_tcp_keepalive_intvl
_.net_netfilter_nf_conntrack_buckets
_.net_netfilter_nf_conntrack_max
_.vm_max_map_count
_.vm_swappiness
_.vm_vfs_cache_pressure

# Read by the standard library or a client library, not by our code.
_.model_post_init  # pydantic calls it after validation
_.maxlevel  # reprlib.Repr's limits (api/excerpt.py)
_.maxlist
_.maxtuple
_.maxset
_.maxfrozenset
_.maxstring
_.maxlong
_.maxother
_.client_go_retries  # the kubernetes client's Configuration
_.address_family  # socketserver picks IPv4 or IPv6 from it
_.handle_error  # socketserver calls it on a failed request
_.handle_starttag  # html.parser.HTMLParser callbacks
_.handle_endtag
_.handle_data
_.__getattr__  # module-level __getattr__ (PEP 562): nodewright.testing loads pytest lazily
_.frame  # signal handlers take (signum, frame)

# Duck-typed stand-ins, called by name through a client library's interface.
_.describe_instance_types  # boto3 EC2 paginators (offline AWS cloud)
_.describe_instance_type_offerings
_.describe_spot_price_history
_.describe_subnets
_.describe_security_groups
_.get_products  # boto3 Pricing paginator
_.send  # azure-core HttpTransport (offline Azure cloud)
_.get_token  # azure-core TokenCredential
_.get_token_info
_._content  # azure-core HttpResponse internals the offline transport fills in
_._is_closed
_._is_stream_consumed
_._post  # the fake API server dispatches on f"_{verb}"
_._put
