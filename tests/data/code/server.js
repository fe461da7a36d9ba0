// A tiny HTTP server.
const http = require("http");

class Router {
  constructor() {
    this.routes = {};
  }

  add(path, handler) {
    this.routes[path] = handler;
  }
}

function start(port) {
  const router = new Router();
  return http.createServer((req, res) => router.routes[req.url](req, res)).listen(port);
}

module.exports = { Router, start };
