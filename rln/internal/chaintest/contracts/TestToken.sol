// SPDX-License-Identifier: MIT
pragma solidity 0.8.24;

import { ERC20 } from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

// An ERC-20 token for membership deposits in tests (The Waku Network uses
// its own test stable token, waku-rlnv2-contract test/TestStableToken.sol).
// The deployer may mint.
contract TestToken is ERC20 {
    address public owner;

    constructor() ERC20("TestToken", "TST") {
        owner = msg.sender;
    }

    function mint(address to, uint256 amount) external {
        require(msg.sender == owner, "caller is not the owner");
        _mint(to, amount);
    }
}
