"""The relay: one upstream `Client` served to many downstreams, as the session daemon and
the gateway both do.

* `upstream`: a supervised upstream, a `Client` held across connections and started
  again by a `Policy` (a `Backoff` schedule; which failures restart on their own; what
  happens otherwise). The daemon's `restart: on-failure` and the gateway's reconnecting
  links are two policies of the one `Supervisor`.
* `routing`: which downstream caused what the upstream sends (the request whose stream
  carried it, the task it is tagged with, the one downstream with requests in flight),
  one `Router` whose owner adds its own rules as parameters.
* `listings`: what an upstream listed, kept until it says the list changed (or its time
  to live ends), with re-listing coalesced to one fetch in flight and one after it.

May import: `client`, `rpc` and the foundations; never the daemon or the gateway
(they import it).
"""
