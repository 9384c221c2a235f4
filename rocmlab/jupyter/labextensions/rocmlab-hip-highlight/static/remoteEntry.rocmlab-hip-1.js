// rocmlab-hip-highlight: a hand-written JupyterLab 4 federated extension (no build step, no bundled code).
// It registers HIP / CUDA sources (.hip, .cu, .cuh) as a language of JupyterLab's editor that uses the
// C++ highlighting JupyterLab already ships. JupyterLab loads this file as a module-federation container:
// init() receives the shared scope, get("./extension") returns the module whose default is the plugin.
var _JUPYTERLAB;
(function () {
  "use strict";
  if (typeof _JUPYTERLAB === "undefined") { _JUPYTERLAB = {}; }
  var scope = null;

  function shared(name) {
    var versions = scope && scope[name];
    if (!versions) { return Promise.reject(new Error("rocmlab-hip-highlight: " + name + " is not shared")); }
    var loaded = Object.keys(versions).filter(function (v) { return versions[v].loaded; });
    var key = (loaded.length ? loaded : Object.keys(versions))[0];
    return Promise.resolve(versions[key].get()).then(function (factory) { return factory(); });
  }

  var EXTENSIONS = ["hip", "cu", "cuh"];

  function plugin(codemirror) {
    return {
      id: "rocmlab-hip-highlight:languages",
      description: "HIP and CUDA sources (.hip, .cu, .cuh) are highlighted as C++ in the editor.",
      autoStart: true,
      requires: [codemirror.IEditorLanguageRegistry],
      activate: function (app, languages) {
        languages.addLanguage({
          name: "HIP",
          displayName: "HIP / CUDA C++",
          alias: ["hip", "cuda"],
          mime: "text/x-hip",
          extensions: EXTENSIONS,
          load: function () {
            return languages.getLanguage("C++").then(function (cpp) {
              if (!cpp || !cpp.support) { throw new Error("rocmlab-hip-highlight: no C++ language here"); }
              return cpp.support;
            });
          }
        });
        if (app.docRegistry && !app.docRegistry.getFileType("hip")) {
          app.docRegistry.addFileType({
            name: "hip", displayName: "HIP / CUDA source", mimeTypes: ["text/x-hip"],
            extensions: EXTENSIONS.map(function (e) { return "." + e; }), contentType: "file",
            fileFormat: "text"
          });
        }
      }
    };
  }

  _JUPYTERLAB["rocmlab-hip-highlight"] = {
    init: function (shareScope) { scope = shareScope; },
    get: function (module) {
      if (module !== "./extension") {
        return Promise.reject(new Error("rocmlab-hip-highlight: no module " + module));
      }
      return shared("@jupyterlab/codemirror").then(function (codemirror) {
        var exports = { __esModule: true, default: [plugin(codemirror)] };
        return function () { return exports; };
      });
    }
  };
})();
