// SPDX-License-Identifier: MIT
pragma solidity 0.8.24;

// The price calculator interface of The Waku Network's membership contract
// (waku-rlnv2-contract, src/IPriceCalculator.sol) and a linear one like its
// src/LinearPriceCalculator.sol: a deposit of rateLimit × price in one token.

interface IPriceCalculator {
    /// Returns the token and the deposit for a membership of rateLimit messages per epoch.
    function calculate(uint32 rateLimit) external view returns (address, uint256);
}

error OnlyTokensAllowed();

contract LinearPriceCalculator is IPriceCalculator {
    address public owner;
    address public token;
    uint256 public pricePerMessagePerEpoch;

    constructor(address _token, uint256 _pricePerMessagePerEpoch) {
        owner = msg.sender;
        _set(_token, _pricePerMessagePerEpoch);
    }

    function setTokenAndPrice(address _token, uint256 _pricePerMessagePerEpoch) external {
        require(msg.sender == owner, "caller is not the owner");
        _set(_token, _pricePerMessagePerEpoch);
    }

    function calculate(uint32 rateLimit) external view returns (address, uint256) {
        return (token, uint256(rateLimit) * pricePerMessagePerEpoch);
    }

    function _set(address _token, uint256 _price) internal {
        if (_token == address(0)) revert OnlyTokensAllowed();
        token = _token;
        pricePerMessagePerEpoch = _price;
    }
}
