// CoreDNS with only the plugins kubeadm's Corefile names (errors, health,
// ready, kubernetes, prometheus, forward, cache, loop, reload, loadbalance)
// plus log. Upstream's main imports all ~60 plugins, and with them the cloud
// SDKs of route53, azure and clouddns, the Datadog tracer and the etcd
// client: most of a cold build's download and compile time, for plugins a
// kind cluster never loads. The directive order is upstream's own
// (dnsserver.Directives); a Corefile naming a plugin left out here fails at
// start with "unknown directive".
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
