// @waku/sdk 0.0.36 declares Node.js 22 and calls Promise.withResolvers,
// which Node.js 20 lacks (it arrived in 22). Importing this module before
// the SDK is all Node.js 20 needs.
if (typeof Promise.withResolvers !== "function") {
  Promise.withResolvers = function withResolvers() {
    let resolve;
    let reject;
    const promise = new this((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}
