// Preloaded into Node peers (`node --require loopback.cjs ...`): every server socket
// listens on 127.0.0.1 only. server-everything's HTTP modes take a PORT but bind all
// interfaces; the tests must not expose a server to the network.
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  const callback = args.find((a) => typeof a === "function");
  if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    return listen.call(this, { port: Number(first), host: "127.0.0.1" }, callback);
  }
  if (first && typeof first === "object" && !("fd" in first) && !("path" in first) && !("handle" in first) && !("_handle" in first)) {
    return listen.call(this, { ...first, host: "127.0.0.1" }, callback);
  }
  return listen.apply(this, args);
};
